"""Goal generators: the part of an ``Agent`` that appends a goal to the observation.

A goal generator (``Agent.goal_generator``) is an ``Algorithm`` with

- ``goal_spec``: the spec of the goal ``[n]`` the RL algorithm sees beside the
  observation (``[observation, goal]``);
- ``rollout_step`` / ``predict_step(time_step, state) -> AlgStep(output=goal, state,
  info)``, where ``info.goal`` records the goal acted with;
- ``recorded_goal(info)``: the goal of recorded rows (training uses the goal the
  experience was collected with, never a new draw);
- ``goal_reward(time_step, info)``: a reward ``[T, B]`` of its own added to the RL
  algorithm's, or None.

``RandomCategoricalGoalGenerator`` draws one of ``num_of_goals`` one-hot goals uniformly at
each episode's FIRST step and keeps it for the episode (DIAYN's skill ``z ~ p(z)``).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

import alf
from alf.algorithms.algorithm import Algorithm
from alf.configuration.argtypes import Count
from alf.data_structures import AlgStep, LossInfo, StepType
from alf.tensor_specs import BoundedTensorSpec


class GoalState(NamedTuple):
    goal: object = ()


class GoalInfo(NamedTuple):
    goal: object = ()


@alf.configurable
class RandomCategoricalGoalGenerator(Algorithm):
    """A uniformly drawn one-hot goal per episode (module doc).

    Args:
        observation_spec: the observation's spec (unused: ALF's interface).
        num_of_goals: the number of goals ``n``.
        action_spec: unused (the agent passes it to parts it builds).
        fixed_goal: act with goal ``fixed_goal`` in every episode instead (e.g. to play
            one DIAYN skill); None: draw.
        name: name in summaries.
    """

    def __init__(
        self,
        observation_spec=None,
        num_of_goals: Count = 2,
        action_spec=None,
        fixed_goal: int | None = None,
        name: str = "RandomCategoricalGoalGenerator",
    ):
        del observation_spec, action_spec
        goal_spec = BoundedTensorSpec((num_of_goals,), torch.float32, minimum=0.0, maximum=1.0)
        super().__init__(rollout_state_spec=GoalState(goal=goal_spec), name=name)
        self._num_of_goals = num_of_goals
        self._goal_spec = goal_spec
        self.set_fixed_goal(fixed_goal)

    @property
    def goal_spec(self) -> BoundedTensorSpec:
        return self._goal_spec

    @property
    def num_of_goals(self) -> int:
        return self._num_of_goals

    def set_fixed_goal(self, goal: int | None) -> None:
        """Act with goal ``goal`` from the next FIRST step on (None: draw again)."""
        if goal is not None and not 0 <= goal < self._num_of_goals:
            raise ValueError(
                f"{self.name}.fixed_goal={goal}: expected an int in [0, {self._num_of_goals})"
            )
        self._fixed_goal = goal

    def _step(self, inputs, state: GoalState) -> AlgStep:
        step_type = inputs.step_type
        batch_size = step_type.shape[0]
        if self._fixed_goal is None:
            index = torch.randint(self._num_of_goals, (batch_size,), device=step_type.device)
        else:
            index = torch.full((batch_size,), self._fixed_goal, device=step_type.device)
        drawn = torch.nn.functional.one_hot(index, self._num_of_goals).to(torch.float32)
        first = (step_type == StepType.FIRST).unsqueeze(-1)
        goal = torch.where(first, drawn, state.goal)
        return AlgStep(output=goal, state=GoalState(goal=goal), info=GoalInfo(goal=goal))

    def rollout_step(self, inputs, state: GoalState) -> AlgStep:
        return self._step(inputs, state)

    def predict_step(self, inputs, state: GoalState) -> AlgStep:
        return self._step(inputs, state)

    def recorded_goal(self, info: GoalInfo) -> torch.Tensor:
        return info.goal

    def goal_reward(self, time_step, info: GoalInfo):
        """None: this generator pays no reward."""
        return None

    def calc_loss(self, info) -> LossInfo:
        return LossInfo()
