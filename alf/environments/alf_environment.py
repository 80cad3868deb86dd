"""``AlfEnvironment``: the interface every alf environment implements.

An unbatched environment takes and returns numpy nests; a batched one
(``batched == True``) takes and returns torch CPU tensors with a leading batch
dimension ``[B, ...]``. Auto reset: the ``step()`` after a LAST ignores its
action and returns the FIRST step of a new episode (per env within a batch).
"""

from __future__ import annotations

import abc

from alf.data_structures import StepType, TimeStep
from alf.tensor_specs import BoundedTensorSpec, TensorSpec


class AlfEnvironment(abc.ABC):
    """Abstract base class of alf environments.

    Subclasses implement ``_reset``, ``_step``, ``observation_spec`` and
    ``action_spec``; the base class keeps the current time step and turns a
    ``step`` after LAST into a reset (for unbatched envs; batched envs reset
    their members independently).
    """

    def __init__(self):
        self._current_time_step = None

    # -- description ---------------------------------------------------------

    @property
    def batched(self) -> bool:
        """Whether the env takes and returns batched torch nests ``[B, ...]``."""
        return False

    @property
    def batch_size(self) -> int:
        """Number of environments in a batch (1 for an unbatched env)."""
        return 1

    @property
    def num_tasks(self) -> int:
        return 1

    @abc.abstractmethod
    def observation_spec(self):
        """Nest of ``TensorSpec`` of one observation (no batch dim)."""

    @abc.abstractmethod
    def action_spec(self):
        """Nest of ``BoundedTensorSpec`` of one action (no batch dim)."""

    def reward_spec(self) -> TensorSpec:
        """Spec of the reward: a float32 scalar unless the env has vector rewards."""
        return TensorSpec(())

    def env_info_spec(self):
        """Nest of specs of ``TimeStep.env_info`` (empty by default)."""
        return {}

    def time_step_spec(self) -> TimeStep:
        """A ``TimeStep`` of specs (no batch dims)."""
        return TimeStep(
            step_type=BoundedTensorSpec((), "int32", StepType.FIRST, StepType.LAST),
            reward=self.reward_spec(),
            discount=BoundedTensorSpec((), "float32", 0.0, 1.0),
            observation=self.observation_spec(),
            prev_action=self.action_spec(),
            env_id=TensorSpec((), "int32"),
            env_info=self.env_info_spec(),
        )

    # -- running ---------------------------------------------------------------

    def current_time_step(self):
        """The last time step returned by ``reset``/``step`` (None before the first)."""
        return self._current_time_step

    def reset(self) -> TimeStep:
        """Start new episodes and return their FIRST time steps."""
        self._current_time_step = self._reset()
        return self._current_time_step

    def step(self, action) -> TimeStep:
        """Apply ``action`` and return the next time step.

        For an unbatched env, the step after a LAST (or before any reset)
        returns ``reset()`` and ignores ``action``.
        """
        if self._current_time_step is None or (
            not self.batched and bool(self._current_time_step.is_last())
        ):
            return self.reset()
        self._current_time_step = self._step(action)
        return self._current_time_step

    @abc.abstractmethod
    def _reset(self) -> TimeStep:
        """Reset and return the FIRST time step."""

    @abc.abstractmethod
    def _step(self, action) -> TimeStep:
        """Apply ``action`` (never called right after a LAST for unbatched envs)."""

    def seed(self, seed: int) -> None:
        """Seed the environment's random number generator(s)."""

    def render(self, mode: str = "rgb_array"):
        """Render the environment (an ``[H, W, 3]`` uint8 array for ``'rgb_array'``)."""
        raise NotImplementedError(f"{type(self).__name__} does not support render()")

    def close(self) -> None:
        """Release resources. Idempotent."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
