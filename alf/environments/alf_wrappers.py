"""Wrappers of (unbatched) ``AlfEnvironment``s.

- ``AlfEnvironmentBaseWrapper``: delegates everything to the wrapped env.
- ``TimeLimit``: ends episodes after ``duration`` steps with a LAST whose
  discount is left as the wrapped env gave it (1), so values bootstrap.
- ``RandomFirstEpisodeLength``: the first episode ends after a random number of
  steps, which de-synchronizes the episodes of parallel envs.
- ``NonEpisodicAgent``: turns every LAST with discount 0 into discount 1 (for
  agents that must not see terminations as the end of the world).
- ``AtariTerminalOnLifeLossWrapper``: discount 0 at the step an Atari game loses a life,
  the game (the episode) going on.

A wrapper sees the auto reset of ``AlfEnvironment.step`` at its own level: the
step after a LAST produced by the wrapper (or the wrapped env) resets the
wrapped env and ignores the action.
"""

from __future__ import annotations

import numpy as np

import alf
from alf.data_structures import StepType, TimeStep
from alf.environments.alf_environment import AlfEnvironment

_LAST = np.asarray(StepType.LAST, dtype=StepType.DTYPE)


class AlfEnvironmentBaseWrapper(AlfEnvironment):
    """An ``AlfEnvironment`` that forwards every call to ``env``.

    Subclasses override what they change. Attributes not found on the wrapper
    are looked up on the wrapped env.

    Args:
        env: the ``AlfEnvironment`` to wrap.
    """

    def __init__(self, env: AlfEnvironment):
        super().__init__()
        self._env = env

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._env, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._env!r})"

    def wrapped_env(self) -> AlfEnvironment:
        """The env directly wrapped by this wrapper."""
        return self._env

    @property
    def unwrapped(self) -> AlfEnvironment:
        """The innermost (non-wrapper) env."""
        env = self._env
        while isinstance(env, AlfEnvironmentBaseWrapper):
            env = env.wrapped_env()
        return env

    @property
    def batched(self) -> bool:
        return self._env.batched

    @property
    def batch_size(self) -> int:
        return self._env.batch_size

    @property
    def num_tasks(self) -> int:
        return self._env.num_tasks

    def observation_spec(self):
        return self._env.observation_spec()

    def action_spec(self):
        return self._env.action_spec()

    def reward_spec(self):
        return self._env.reward_spec()

    def env_info_spec(self):
        return self._env.env_info_spec()

    def _reset(self) -> TimeStep:
        return self._env.reset()

    def _step(self, action) -> TimeStep:
        return self._env.step(action)

    def seed(self, seed: int) -> None:
        self._env.seed(seed)

    def render(self, mode: str = "rgb_array"):
        return self._env.render(mode)

    def close(self) -> None:
        self._env.close()


@alf.configurable
class TimeLimit(AlfEnvironmentBaseWrapper):
    """End each episode after ``duration`` steps with a LAST that keeps its discount.

    The discount of the limit step is the wrapped env's (1 for a MID), so the
    value of the last observation is bootstrapped (docs/design.md, section 3). An episode
    the wrapped env ends earlier is unchanged.

    Args:
        env: an unbatched ``AlfEnvironment``.
        duration: maximum number of steps (actions) per episode, > 0.
    """

    def __init__(self, env: AlfEnvironment, duration: int):
        if env.batched:
            raise ValueError("TimeLimit wraps unbatched environments only")
        if duration <= 0:
            raise ValueError(f"TimeLimit duration must be > 0, got {duration}")
        super().__init__(env)
        self._duration = int(duration)
        self._num_steps = 0

    @property
    def duration(self) -> int:
        return self._duration

    def _reset(self) -> TimeStep:
        self._num_steps = 0
        return self._env.reset()

    def _step(self, action) -> TimeStep:
        time_step = self._env.step(action)
        self._num_steps += 1
        if self._num_steps >= self._duration and not time_step.is_last():
            time_step = time_step._replace(step_type=_LAST)
        return time_step


@alf.configurable
class RandomFirstEpisodeLength(AlfEnvironmentBaseWrapper):
    """Truncate the first episode(s) after a random number of steps in ``[1, max_length]``.

    Parallel envs that start together otherwise end their episodes together,
    which correlates the collected experience. The cut is a LAST with the
    discount left as is (like ``TimeLimit``); later episodes are untouched.

    Args:
        env: an unbatched ``AlfEnvironment``.
        max_length: upper bound of the first episode's length (e.g. the time limit).
        seed: seed of the length draw (None: nondeterministic).
        random_length_range: ALF's name of ``max_length`` (give one of the two).
        num_episodes: the first so many episodes get a random length (ALF's argument).
    """

    def __init__(
        self,
        env: AlfEnvironment,
        max_length: int | None = None,
        seed: int | None = None,
        random_length_range: int | None = None,
        num_episodes: int = 1,
    ):
        if (max_length is None) == (random_length_range is None):
            raise ValueError(
                "RandomFirstEpisodeLength needs max_length (or ALF's random_length_range), "
                "and only one of them"
            )
        if max_length is None:
            max_length = random_length_range
        if max_length <= 0:
            raise ValueError(f"max_length must be > 0, got {max_length}")
        if num_episodes < 0:
            raise ValueError(f"num_episodes must be >= 0, got {num_episodes}")
        super().__init__(env)
        self._rng = np.random.default_rng(seed)
        self._max_length = int(max_length)
        self._num_episodes = int(num_episodes)
        self._episodes = 0  # episodes started
        self._first_length = None
        self._num_steps = 0

    def seed(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        super().seed(seed)

    def _reset(self) -> TimeStep:
        self._episodes += 1
        self._first_length = int(self._rng.integers(1, self._max_length + 1))
        self._num_steps = 0
        return self._env.reset()

    def _step(self, action) -> TimeStep:
        time_step = self._env.step(action)
        self._num_steps += 1
        if (
            self._episodes <= self._num_episodes
            and self._num_steps >= self._first_length
            and not time_step.is_last()
        ):
            time_step = time_step._replace(step_type=_LAST)
        return time_step


@alf.configurable
class NonEpisodicAgent(AlfEnvironmentBaseWrapper):
    """Make the agent treat terminations like time limits: every discount becomes 1.

    The episode still ends (LAST, then auto reset), but the value is
    bootstrapped over it, as for a non-episodic (continuing) task.

    Args:
        env: an unbatched ``AlfEnvironment``.
    """

    _ONE = np.asarray(1.0, dtype=np.float32)

    def _step(self, action) -> TimeStep:
        time_step = self._env.step(action)
        if time_step.is_last():
            time_step = time_step._replace(discount=self._ONE.copy())
        return time_step


@alf.configurable
class AtariTerminalOnLifeLossWrapper(AlfEnvironmentBaseWrapper):
    """Discount 0 at the step that loses a life: a lost life is terminal for the values.

    The step stays a MID and the game goes on, so the episode (and its metrics: return,
    length) is the whole game, as in evaluation; only the value of the step before it is
    not bootstrapped (docs/atari.md compares this with Stable-Baselines3's
    ``EpisodicLifeEnv``). Lives are read from ``env_info[lives_key]``, which
    ``DMAtariPreprocessing`` (``suite_atari.load``) provides.

    Args:
        env: an unbatched ``AlfEnvironment`` whose ``env_info`` has ``lives_key``.
        lives_key: the ``env_info`` field holding the number of lives left.
    """

    _ZERO = np.asarray(0.0, dtype=np.float32)

    def __init__(self, env: AlfEnvironment, lives_key: str = "lives"):
        if env.batched:
            raise ValueError("AtariTerminalOnLifeLossWrapper wraps unbatched environments only")
        info_spec = env.env_info_spec()
        if not isinstance(info_spec, dict) or lives_key not in info_spec:
            keys = sorted(info_spec) if isinstance(info_spec, dict) else info_spec
            raise ValueError(
                f"AtariTerminalOnLifeLossWrapper: the env_info of {env!r} has no '{lives_key}' "
                f"(it has {keys}); wrap an Atari env made by suite_atari.load"
            )
        super().__init__(env)
        self._lives_key = lives_key
        self._lives = 0

    def _reset(self) -> TimeStep:
        time_step = self._env.reset()
        self._lives = int(time_step.env_info[self._lives_key])
        return time_step

    def _step(self, action) -> TimeStep:
        time_step = self._env.step(action)
        lives = int(time_step.env_info[self._lives_key])
        if lives < self._lives:
            time_step = time_step._replace(discount=self._ZERO.copy())
        self._lives = lives
        return time_step
