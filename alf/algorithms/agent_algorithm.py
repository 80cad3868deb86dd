"""``AgentAlgorithm``: an RL algorithm with a representation learner, a goal generator and
an intrinsic reward module around it (what ``Agent`` builds when any is given).

**One step** (``rollout_step``; ``predict_step`` alike without the reward module):

    observation ─ representation learner ─> z        (the observation itself without one)
    z, goal generator ─> [z, goal]                   (z without one)
    [z, goal] ─ intrinsic reward module ─> raw intrinsic reward, recorded
    [z, goal] ─ RL algorithm ─> action

The state and the recorded info are ``AgentState`` / ``AgentInfo`` with one field per part.

**Training.** The learner is the RL algorithm's own (``learner_class`` follows it: an
``EpochLearner`` for PPO, a ``ReplayLearner`` for SAC, ...), trained on the agent's
experience:

- ``preprocess_experience``: the reward is composed,
  ``extrinsic_reward_coef * r + intrinsic_reward_coef * r_int + goal reward``, where
  ``r_int`` is the module's ``intrinsic_reward`` of the recorded raw rewards (normalized,
  on the learner's side); then the RL algorithm's own preprocessing (e.g. GAE) runs on it;
- one update is the RL algorithm's ``update_from_experience`` (its masks, its KL early stop,
  its hooks), but computed by the agent (``RLAlgorithm.compose_into``): ``train_steps``
  runs every part on the ``[T, B]`` rows (the parts on all rows at once, the RL algorithm
  with its own ``train_steps``), ``calc_loss`` adds the parts' losses (each averaged over its
  rows) to the RL algorithm's as a scalar, and one gradient step updates every part, each
  with its own optimizer or the agent's default;
- ``after_update`` / ``after_train_iter`` go to every part.

Each part's loss terms are summarized under ``loss/<part name>/``, the rewards under
``reward/extrinsic``, ``reward/intrinsic`` and ``reward/overall``. Checkpoints hold every
part (they are sub-modules, their optimizers the agent's).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch

import alf.nest as nest
import alf.summary
from alf.algorithms.rl_algorithm import RLAlgorithm
from alf.data_structures import AlgStep, Experience, LossInfo, TimeStep
from alf.tensor_specs import TensorSpec


class AgentState(NamedTuple):
    """One state per part (``()`` where a part is absent or stateless)."""

    rl: object = ()
    irm: object = ()
    goal_generator: object = ()
    repr: object = ()


class AgentInfo(NamedTuple):
    """One info per part; ``step_type`` ``[B]`` (in ``train_step``'s info)."""

    rl: object = ()
    irm: object = ()
    goal_generator: object = ()
    repr: object = ()
    step_type: object = ()


class AgentAlgorithm(RLAlgorithm):
    """The composition of the module doc.

    Args:
        observation_spec, action_spec, reward_spec, env, config: the trainer's.
        rl_algorithm_cls: the RL algorithm's class, built with ``observation_spec`` the
            spec of what it sees, ``action_spec``, ``reward_spec``, ``config`` and
            ``rl_kwargs``.
        rl_kwargs: more arguments of ``rl_algorithm_cls``.
        representation_learner_cls, goal_generator, intrinsic_reward_module: the parts
            (``Agent``'s arguments).
        intrinsic_reward_coef, extrinsic_reward_coef: the rewards' weights.
        detach_representation: no RL gradient into the representation learner.
        optimizer: the default optimizer of the parts that have none.
        debug_summaries, name: as ``RLAlgorithm``'s.
    """

    #: where a conf sets the default optimizer (``check_optimizers``' message)
    default_optimizer_conf = "Agent"

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        env=None,
        config=None,
        rl_algorithm_cls=None,
        rl_kwargs=None,
        representation_learner_cls=None,
        goal_generator=None,
        intrinsic_reward_module=None,
        intrinsic_reward_coef: float = 1.0,
        extrinsic_reward_coef: float = 1.0,
        detach_representation: bool = False,
        optimizer=None,
        debug_summaries: bool = False,
        name: str = "AgentAlgorithm",
    ):
        specs = dict(action_spec=action_spec, reward_spec=reward_spec, config=config)
        repr_learner, rl_observation_spec = None, observation_spec
        if representation_learner_cls is not None:
            repr_learner = representation_learner_cls(
                observation_spec=observation_spec, **specs, debug_summaries=debug_summaries
            )
            rl_observation_spec = repr_learner.output_spec
        goal_generator = _build(goal_generator, "goal_generator", rl_observation_spec, action_spec)
        if goal_generator is not None:
            rl_observation_spec = [rl_observation_spec, goal_generator.goal_spec]
        irm = _build(
            intrinsic_reward_module, "intrinsic_reward_module", rl_observation_spec, action_spec
        )
        rl = rl_algorithm_cls(observation_spec=rl_observation_spec, **specs, **(rl_kwargs or {}))
        parts = dict(rl=rl, irm=irm, goal_generator=goal_generator, repr=repr_learner)
        for part in (irm, goal_generator, repr_learner):
            if part is not None:
                _check_no_train_state(part, name)
        # the learner of the RL algorithm's data regime (set before the base builds it)
        self.learner_class = rl.learner_class
        super().__init__(
            observation_spec=observation_spec,
            action_spec=action_spec,
            reward_spec=reward_spec,
            train_state_spec=_state_spec(parts, "train"),
            rollout_state_spec=_state_spec(parts, "rollout"),
            predict_state_spec=_state_spec(parts, "predict"),
            env=env,
            config=config,
            optimizer=optimizer,
            debug_summaries=debug_summaries,
            name=name,
        )
        self._rl_algorithm = rl
        self._irm = irm
        self._goal_generator = goal_generator
        self._representation_learner = repr_learner
        self._intrinsic_reward_coef = float(intrinsic_reward_coef)
        self._extrinsic_reward_coef = float(extrinsic_reward_coef)
        self._detach_representation = detach_representation
        rl.compose_into(self)

    # -- the parts -----------------------------------------------------------------

    @property
    def rl_algorithm(self) -> RLAlgorithm:
        """The RL algorithm the parts are composed around."""
        return self._rl_algorithm

    @property
    def intrinsic_reward_module(self):
        return self._irm

    @property
    def goal_generator(self):
        return self._goal_generator

    @property
    def representation_learner(self):
        return self._representation_learner

    def _parts(self):
        """``[(field, part)]`` of the parts present besides the RL algorithm."""
        parts = [
            ("repr", self._representation_learner),
            ("goal_generator", self._goal_generator),
            ("irm", self._irm),
        ]
        return [(field, part) for field, part in parts if part is not None]

    # -- what the learner asks the RL algorithm, answered by it ---------------------

    def stop_training_epochs(self) -> bool:
        stop = getattr(self._rl_algorithm, "stop_training_epochs", None)
        return bool(stop()) if stop is not None else False

    def actor_context(self) -> dict:
        return self._rl_algorithm.actor_context()

    def set_actor_context(self, context: dict) -> None:
        self._rl_algorithm.set_actor_context(context)

    def initial_collect_pending(self) -> bool:
        pending = getattr(self._rl_algorithm, "initial_collect_pending", None)
        return bool(pending()) if pending is not None else False

    # -- the three steps -------------------------------------------------------------

    def _observe(self, step_fn: str, inputs: TimeStep, state: AgentState):
        """``(observation the RL algorithm sees, new state, info)`` of the representation
        learner and the goal generator's ``step_fn`` (``'rollout_step'`` or
        ``'predict_step'``)."""
        new_state, info = AgentState(), AgentInfo()
        observation = inputs.observation
        if self._representation_learner is not None:
            step = getattr(self._representation_learner, step_fn)(inputs, state.repr)
            new_state, info = new_state._replace(repr=step.state), info._replace(repr=step.info)
            observation = step.output
        if self._goal_generator is not None:
            step = getattr(self._goal_generator, step_fn)(
                inputs._replace(observation=observation), state.goal_generator
            )
            new_state = new_state._replace(goal_generator=step.state)
            info = info._replace(goal_generator=step.info)
            observation = [observation, step.output]
        return observation, new_state, info

    def predict_step(self, inputs: TimeStep, state: AgentState) -> AlgStep:
        observation, new_state, info = self._observe("predict_step", inputs, state)
        rl_step = self._rl_algorithm.predict_step(
            inputs._replace(observation=observation), state.rl
        )
        return AlgStep(
            output=rl_step.output,
            state=new_state._replace(rl=rl_step.state),
            info=info._replace(rl=rl_step.info),
        )

    def rollout_step(self, inputs: TimeStep, state: AgentState) -> AlgStep:
        observation, new_state, info = self._observe("rollout_step", inputs, state)
        inputs = inputs._replace(observation=observation)
        if self._irm is not None:
            irm_step = self._irm.rollout_step(inputs, state.irm)
            new_state, info = (
                new_state._replace(irm=irm_step.state),
                info._replace(irm=irm_step.info),
            )
        rl_step = self._rl_algorithm.rollout_step(inputs, state.rl)
        return AlgStep(
            output=rl_step.output,
            state=new_state._replace(rl=rl_step.state),
            info=info._replace(rl=rl_step.info),
        )

    def train_steps(self, experience: Experience) -> AgentInfo:
        """Every part on the ``[T, B]`` rows: the parts on all ``T * B`` rows at once (they
        have no train state), then the RL algorithm's own ``train_steps`` on what it sees."""
        time_step, info = experience.time_step, experience.rollout_info
        shape = time_step.step_type.shape[:2]
        flat_step, flat_info = nest.map_structure(lambda x: x.flatten(0, 1), (time_step, info))
        unflatten = functools.partial(_unflatten, shape=shape)
        result = AgentInfo(step_type=time_step.step_type)
        observation = time_step.observation
        if self._representation_learner is not None:
            step = self._representation_learner.train_step(flat_step, (), flat_info.repr)
            result = result._replace(repr=nest.map_structure(unflatten, step.info))
            observation = nest.map_structure(unflatten, step.output)
            if self._detach_representation:
                observation = nest.map_structure(torch.Tensor.detach, observation)
        if self._goal_generator is not None:
            observation = [observation, self._goal_generator.recorded_goal(info.goal_generator)]
        if self._irm is not None:
            flat_observation = nest.map_structure(lambda x: x.flatten(0, 1), observation)
            step = self._irm.train_step(
                flat_step._replace(observation=flat_observation), (), flat_info.irm
            )
            result = result._replace(irm=nest.map_structure(unflatten, step.info))
        rl_experience = experience._replace(
            time_step=time_step._replace(observation=observation),
            rollout_info=info.rl,
            state=experience.state.rl if isinstance(experience.state, AgentState) else (),
        )
        return result._replace(rl=self._rl_algorithm.train_steps(rl_experience))

    def train_step(self, inputs: TimeStep, state, rollout_info) -> AlgStep:
        raise NotImplementedError(f"{self._name} trains through train_steps")

    def calc_loss(self, info: AgentInfo) -> LossInfo:
        """The RL algorithm's loss, plus each part's loss (its mean over the rows, and its
        ``scalar_loss``) added as a scalar; the parts' terms are summarized under their
        names (``loss/<name>/...``)."""
        loss_info = self._rl_algorithm.calc_loss(info.rl)
        extra_scalar = 0.0
        summarize = alf.summary.should_record_summaries()
        for field, part in self._parts():
            part_info = getattr(info, field)
            if part_info == () or not hasattr(part, "calc_loss"):
                continue
            part_loss = part.calc_loss(part_info)
            scalar = _as_scalar(part_loss)
            if isinstance(scalar, float) and scalar == 0.0:
                continue
            extra_scalar = extra_scalar + scalar
            if summarize:
                alf.summary.scalar(f"loss/{part.name}/loss", scalar)
                for path, value in nest.flatten_with_path(part_loss.extra):
                    alf.summary.scalar(f"loss/{part.name}/{path}", value)
        if isinstance(extra_scalar, float):
            return loss_info
        scalar_loss = loss_info.scalar_loss
        scalar_loss = extra_scalar if isinstance(scalar_loss, tuple) else scalar_loss + extra_scalar
        return loss_info._replace(scalar_loss=scalar_loss)

    # -- training --------------------------------------------------------------------

    def compose_reward(self, time_step: TimeStep, info: AgentInfo) -> torch.Tensor:
        """The reward ``[T, B]`` the RL algorithm is trained on (module doc); the parts'
        reward statistics are updated from these rows."""
        reward = time_step.reward
        if self._extrinsic_reward_coef != 1.0:
            reward = self._extrinsic_reward_coef * reward
        summarize = alf.summary.should_record_summaries()
        if summarize:
            alf.summary.scalar("reward/extrinsic", time_step.reward.float().mean())
        if self._irm is not None:
            seen = time_step._replace(observation=self._module_observation(time_step, info))
            intrinsic = self._irm.intrinsic_reward(seen, info.irm)
            reward = reward + self._intrinsic_reward_coef * intrinsic
            if summarize:
                alf.summary.scalar("reward/intrinsic", intrinsic.float().mean())
        if self._goal_generator is not None:
            goal_reward = self._goal_generator.goal_reward(time_step, info.goal_generator)
            if goal_reward is not None:
                reward = reward + goal_reward
        if summarize:
            alf.summary.scalar("reward/overall", reward.float().mean())
        return reward

    @torch.no_grad()
    def _module_observation(self, time_step: TimeStep, info: AgentInfo):
        """The observation ``[T, B, ...]`` the intrinsic reward module saw at rollout: the
        representation (recomputed), with the recorded goal appended."""
        observation = time_step.observation
        if self._representation_learner is not None:
            shape = time_step.step_type.shape[:2]
            flat_step, flat_info = nest.map_structure(
                lambda x: x.flatten(0, 1), (time_step, info.repr)
            )
            output = self._representation_learner.train_step(flat_step, (), flat_info).output
            observation = nest.map_structure(functools.partial(_unflatten, shape=shape), output)
        if self._goal_generator is not None:
            observation = [observation, self._goal_generator.recorded_goal(info.goal_generator)]
        return observation

    def preprocess_experience(self, experience: Experience) -> Experience:
        """The composed reward (``compose_reward``), then the RL algorithm's own
        preprocessing of its part of the experience."""
        info = experience.rollout_info
        time_step = experience.time_step
        time_step = time_step._replace(reward=self.compose_reward(time_step, info))
        rl_view = experience._replace(time_step=time_step, rollout_info=info.rl)
        rl_view = self._rl_algorithm.preprocess_experience(rl_view)
        return rl_view._replace(rollout_info=info._replace(rl=rl_view.rollout_info))

    def update_from_experience(self, experience: Experience, valid_masks=None) -> LossInfo:
        """The RL algorithm's update (its masks and hooks), computed by this agent."""
        return self._rl_algorithm.update_from_experience(experience, valid_masks)

    def after_update(self, experience: Experience, train_info: AgentInfo) -> None:
        self._rl_algorithm.after_update(_rl_view(experience), train_info.rl)
        for field, part in self._parts():
            hook = getattr(part, "after_update", None)
            if hook is not None:
                hook(experience, getattr(train_info, field))

    def after_train_iter(self, experience: Experience, train_info=None) -> None:
        rl_info = train_info.rl if isinstance(train_info, AgentInfo) else train_info
        self._rl_algorithm.after_train_iter(_rl_view(experience), rl_info)
        for _, part in self._parts():
            hook = getattr(part, "after_train_iter", None)
            if hook is not None:
                hook(experience)


def _rl_view(experience: Experience) -> Experience:
    """The RL algorithm's part of the agent's experience (its rollout info and state)."""
    info, state = experience.rollout_info, experience.state
    return experience._replace(
        rollout_info=info.rl if isinstance(info, AgentInfo) else info,
        state=state.rl if isinstance(state, AgentState) else state,
    )


def _build(part, arg: str, observation_spec, action_spec):
    """``part`` if built (an ``nn.Module``) or None, else ``part(observation_spec=,
    action_spec=)``; ``arg``: ``Agent``'s argument, for the error."""
    if part is None or isinstance(part, torch.nn.Module):
        return part
    if not callable(part):
        raise ValueError(
            f"Agent.{arg}: expected an algorithm or its constructor, got {type(part).__name__}"
        )
    return part(observation_spec=observation_spec, action_spec=action_spec)


def _check_no_train_state(part, agent_name: str) -> None:
    if nest.flatten(part.train_state_spec):
        raise ValueError(
            f"{agent_name}: {part.name} has a train state; the parts of an agent are "
            "trained on all rows at once and must have none"
        )


def _state_spec(parts: dict, which: str) -> AgentState:
    return AgentState(
        **{
            field: () if part is None else getattr(part, f"{which}_state_spec")
            for field, part in parts.items()
        }
    )


def _unflatten(x: torch.Tensor, shape) -> torch.Tensor:
    return x.unflatten(0, tuple(shape))


def _as_scalar(loss_info: LossInfo):
    """``mean(loss) + scalar_loss`` of a part's ``LossInfo`` (0.0 when it has neither)."""
    total = 0.0
    if isinstance(loss_info.loss, torch.Tensor):
        total = total + loss_info.loss.mean()
    if isinstance(loss_info.scalar_loss, torch.Tensor):
        total = total + loss_info.scalar_loss
    return total
