"""``EnvpoolEnvironment``: a batch of envs stepped by envpool's C++ thread pool.

``create_environment(batched_backend='envpool')`` returns one instead of the envs made by
``env_load_fn`` (docs/envpool.md). envpool (an optional extra: ``pip install
alf[envpool]``) runs classic control, MuJoCo, Atari and more envs in C++ threads and
returns whole batches; this class turns its gymnasium-style results into alf's
``TimeStep`` rows with exactly the rules of the gymnasium path (``AlfGymWrapper`` and
``TimeLimit``, docs/design.md section 3):

- ``reset()`` → FIRST for every row: reward 0, discount 1, ``prev_action`` zeros;
- ``terminated`` → LAST with discount 0;
- ``truncated`` (envpool's own time limit, set to alf's ``max_episode_steps``) and not
  ``terminated`` → LAST with discount ``discount`` (1 by default);
- otherwise MID with discount ``discount``;
- the step after a row's LAST ignores that row's action and returns its FIRST, while
  the other rows keep going. envpool's gymnasium API resets a done env in the *next*
  ``step`` call (its "next step" autoreset: the action is ignored, reward 0), which is
  alf's rule; this class marks those rows FIRST and zeroes their ``prev_action``.

Observations and rewards get alf's dtypes (float boxes as float32); ``env_id`` of row
``i`` is ``i``; env ``i`` is seeded with ``seed + i`` (envpool takes one seed per env).
``env_info`` holds envpool's numeric per-env info entries (floats as float32, ints as
int64) except its bookkeeping (``env_id``, ``elapsed_step``, ``players``); the names
are envpool's and may differ from gymnasium's (e.g. MuJoCo's ``reward_run``).

Every ``reset``/``step`` runs through a ``StepGuard`` (``step_timeout`` and stop
signals, ``alf.environments.step_guard``); a step blocked inside envpool's C++ code is
interrupted once it returns to the interpreter.
"""

from __future__ import annotations

import contextlib
import re
import warnings

import numpy as np
import torch

import alf
import alf.nest as nest
from alf.data_structures import StepType, TimeStep
from alf.environments.alf_environment import AlfEnvironment
from alf.environments.alf_gym_wrapper import env_info_spec_from_infos
from alf.environments.batched_environment import (
    check_batched_leaves,
    member_seeds,
    to_numpy_leaf,
)
from alf.environments.step_guard import StepGuard
from alf.tensor_specs import BoundedTensorSpec, TensorSpec, tensor_spec_from_gym_space

#: envpool's info entries that are bookkeeping, not env information.
_BOOKKEEPING_INFO = ("env_id", "elapsed_step", "players")
#: envpool's own time limit, never reached: alf applies its ``max_episode_steps`` itself,
#: because at its limit envpool reports ``truncated`` and not ``terminated`` even when the
#: episode also terminated there (CartPole's pole fell at step 500), where alf's rule is a
#: termination (discount 0).
_NO_LIMIT = 2**31 - 1
_INSTALL_HINT = "the envpool backend needs the envpool package: pip install alf[envpool]"


def import_envpool():
    """The ``envpool`` module; ``ImportError`` with the install command when missing."""
    try:
        import envpool
    except ImportError as e:
        raise ImportError(f"{_INSTALL_HINT} ({e})") from None
    return envpool


def _split_version(env_id: str) -> tuple[str, int | None]:
    match = re.fullmatch(r"(.*)-v(\d+)", env_id)
    if match is None:
        return env_id, None
    return match.group(1), int(match.group(2))


def resolve_task_id(env_name: str, available: list[str]) -> str:
    """The envpool id for alf's ``env_name``, never another version of it.

    An unversioned name (``'CartPole'``) means its highest version, as in gymnasium.

    Raises:
        ValueError: envpool has no such env (or not this version); the one-line message
            names ``env_name`` and the versions envpool has.
    """
    if env_name in available:
        return env_name
    name, version = _split_version(env_name)
    versions = sorted(
        (v, task) for task in available for n, v in [_split_version(task)] if n == name
    )
    versions = [(v, task) for v, task in versions if v is not None]
    if version is None and versions:
        return versions[-1][1]
    has = (
        f"it has {', '.join(task for _, task in versions)}"
        if versions
        else "see envpool.list_all_envs()"
    )
    raise ValueError(f"envpool has no environment '{env_name}'; {has}")


def _default_time_limit(task_id: str, envpool_default: int) -> int:
    """The time limit gymnasium registers for ``task_id`` (what ``suite_gym.load`` uses),
    or envpool's own when gymnasium does not know the id."""
    import gymnasium as gym

    spec = gym.envs.registry.get(task_id)
    if spec is not None and spec.max_episode_steps:
        return int(spec.max_episode_steps)
    return int(envpool_default)


@contextlib.contextmanager
def _quiet_box_casts():
    """Without gymnasium's warning about envpool's float64 bounds of float32 boxes."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*precision lowered by casting")
        yield


def _random_seeds(count: int) -> list[int]:
    base = int(np.random.default_rng().integers(0, 2**31 - 1 - count))
    return member_seeds(base, count)


def _map(spec_nest, fn, *values):
    """``alf.nest.map_structure(fn, spec_nest, *values)``, without the walk for one spec."""
    if not nest.is_nested(spec_nest):
        return fn(spec_nest, *values)
    return nest.map_structure(fn, spec_nest, *values)


def _as_spec(spec, value) -> np.ndarray:
    return np.asarray(value, spec.numpy_dtype)


class _Rows:
    """One batch of results in row order (row ``i`` is envpool's env ``i``), assembled from
    envpool's answers to a ``reset`` and/or a ``step`` of some of the envs.

    Args:
        observation_spec, env_info_spec: the env's specs.
        num_envs: the batch size.
    """

    def __init__(self, observation_spec, env_info_spec: dict, num_envs: int):
        self._observation_spec = observation_spec
        self._env_info_spec = env_info_spec
        self._num_envs = num_envs
        self._all = np.arange(num_envs)
        self.observation = None
        self.env_info = None
        self.reward = np.zeros(num_envs, np.float32)
        self.terminated = np.zeros(num_envs, bool)
        self.truncated = np.zeros(num_envs, bool)

    def put(self, observation, info: dict) -> None:
        """Write the observations and ``env_info`` of envpool's envs ``info['env_id']``."""
        ids = np.asarray(info["env_id"])
        if self.observation is None and np.array_equal(ids, self._all):  # all, in order
            self.observation = _map(self._observation_spec, _as_spec, observation)
            self.env_info = {
                key: _as_spec(spec, info[key]).reshape(self._num_envs, *spec.shape)
                for key, spec in self._env_info_spec.items()
            }
            return
        if self.observation is None:
            self.observation = _map(
                self._observation_spec,
                lambda spec: np.zeros((self._num_envs, *spec.shape), spec.numpy_dtype),
            )
            self.env_info = {
                key: np.zeros((self._num_envs, *spec.shape), spec.numpy_dtype)
                for key, spec in self._env_info_spec.items()
            }
        _map(self.observation, lambda dst, value: dst.__setitem__(ids, value), observation)
        for key, dst in self.env_info.items():
            dst[ids] = np.asarray(info[key]).reshape(len(ids), *dst.shape[1:])

    def put_step(self, observation, reward, terminated, truncated, info: dict) -> None:
        """Write one ``step`` result of envpool's envs ``info['env_id']``."""
        self.put(observation, info)
        ids = np.asarray(info["env_id"])
        self.reward[ids] = reward
        self.terminated[ids] = terminated
        self.truncated[ids] = truncated


@alf.configurable
class EnvpoolEnvironment(AlfEnvironment):
    """``num_envs`` envs of one envpool id as a batched torch ``AlfEnvironment``.

    Args:
        env_name: an id envpool has (``envpool.list_all_envs()``), e.g. ``'CartPole-v1'``,
            ``'HalfCheetah-v5'``, ``'Pong-v5'``; another version is never substituted.
        num_envs: the batch size ``B``.
        seed: env ``i`` is seeded with ``seed + i`` (modulo 2**31: envpool's seeds are
            int32; a sequence gives each env's seed); None draws a random base seed.
        max_episode_steps: alf's rule of ``suite_gym.load``: None uses the limit gymnasium
            registers for the id (envpool's own default if gymnasium does not know it),
            a positive value sets it, 0 or negative means no limit. Reaching it gives a
            LAST with discount ``discount``.
        discount: discount of MID steps and of time-limit LAST steps; a termination
            always has discount 0.
        num_threads: envpool's worker threads (0: envpool's choice, at most one per core).
        step_timeout: seconds a ``reset``/``step`` may take (``StepGuard``); None: no limit.
        make_kwargs: extra keyword arguments of ``envpool.make_gymnasium`` (e.g. Atari's
            ``episodic_life``, ``stack_num``).

    Raises:
        ImportError: envpool is not installed (the message says ``pip install alf[envpool]``).
        ValueError: envpool has no env ``env_name``.
    """

    def __init__(
        self,
        env_name: str = "CartPole-v1",
        num_envs: int = 1,
        seed=None,
        max_episode_steps: int | None = None,
        discount: float = 1.0,
        num_threads: int = 0,
        step_timeout: float | None = None,
        make_kwargs: dict | None = None,
    ):
        super().__init__()
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self._envpool = import_envpool()
        self._task_id = resolve_task_id(env_name, self._envpool.list_all_envs())
        self._num_envs = int(num_envs)
        self._discount = float(discount)
        self._make_kwargs = dict(make_kwargs or {}, num_threads=int(num_threads))
        default_limit = self._envpool.make_spec(self._task_id).config.max_episode_steps
        if max_episode_steps is None:
            max_episode_steps = _default_time_limit(self._task_id, default_limit)
        self._max_episode_steps = int(max_episode_steps)
        self._pool = None
        self._guard = StepGuard(f"envpool {self._task_id} ({self._num_envs} envs)", step_timeout)
        self.seed(seed)
        self._observation_spec = tensor_spec_from_gym_space(self._pool.observation_space)
        self._action_spec = tensor_spec_from_gym_space(self._pool.action_space)
        if nest.is_nested(self._action_spec):
            self.close()
            raise ValueError(
                f"envpool env '{self._task_id}' has a nested action space; the envpool "
                "backend supports single-array actions only"
            )
        self._env_info_spec = None
        self._limit = self._max_episode_steps if self._max_episode_steps > 0 else np.inf
        self._num_steps = np.zeros(self._num_envs, np.int64)
        self._ended = np.zeros(self._num_envs, bool)  # rows whose last time step was LAST
        self._restart = np.zeros(self._num_envs, bool)  # ... ended by alf's time limit
        self._rows = np.arange(self._num_envs, dtype=np.int32)

    # -- description -----------------------------------------------------------

    @property
    def batched(self) -> bool:
        return True

    @property
    def batch_size(self) -> int:
        return self._num_envs

    @property
    def task_id(self) -> str:
        """The envpool id stepped."""
        return self._task_id

    @property
    def max_episode_steps(self) -> int:
        """The time limit (0: none)."""
        return max(self._max_episode_steps, 0)

    def observation_spec(self):
        return self._observation_spec

    def action_spec(self):
        return self._action_spec

    def reward_spec(self) -> TensorSpec:
        return TensorSpec((), np.float32)

    def env_info_spec(self):
        if self._env_info_spec is None:
            self._guard.call(self._reset_pool)
        return self._env_info_spec

    # -- running -----------------------------------------------------------------

    def seed(self, seed) -> None:
        """(Re)make the pool with env ``i`` seeded ``seed + i``; the next step resets."""
        if seed is None:
            seeds = _random_seeds(self._num_envs)
        else:  # envpool's seeds are int32
            seeds = [s % 2**31 for s in member_seeds(seed, self._num_envs)]
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        with _quiet_box_casts():
            self._pool = self._envpool.make_gymnasium(
                self._task_id,
                num_envs=self._num_envs,
                batch_size=self._num_envs,
                seed=seeds,
                max_episode_steps=_NO_LIMIT,
                **self._make_kwargs,
            )
            # envpool makes its gymnasium spaces on first use and keeps them: make them here
            _ = (self._pool.observation_space, self._pool.action_space)
        self._current_time_step = None

    def _reset(self) -> TimeStep:
        return self._guard.call(self._reset_pool)

    def _step(self, action) -> TimeStep:
        return self._guard.call(self._step_pool, action)

    def _reset_pool(self) -> TimeStep:
        observation, info = self._pool.reset()
        if self._env_info_spec is None:
            row_info = {k: v[0] for k, v in info.items() if k not in _BOOKKEEPING_INFO}
            self._env_info_spec = env_info_spec_from_infos([row_info])
        rows = _Rows(self._observation_spec, self._env_info_spec, self._num_envs)
        rows.put(observation, info)
        self._num_steps[:] = 0
        self._ended[:] = False
        self._restart[:] = False
        all_rows = np.ones(self._num_envs, bool)
        return self._time_step(rows, all_rows, None, rows.terminated)

    def _step_pool(self, action) -> TimeStep:
        """One envpool step of the live rows; the rows alf's time limit ended are reset."""
        action = self._action_array(action)
        first, restart = self._ended, self._restart
        rows = _Rows(self._observation_spec, self._env_info_spec, self._num_envs)
        if restart.any():
            rows.put(*self._pool.reset(np.flatnonzero(restart).astype(np.int32)))
        if not restart.any():
            rows.put_step(*self._pool.step(action))
        elif not restart.all():
            live = np.flatnonzero(~restart).astype(np.int32)
            rows.put_step(*self._pool.step(action[live], env_id=live))
        self._num_steps = np.where(first, 0, self._num_steps + 1)
        ended_by_env = (rows.terminated | rows.truncated) & ~first
        self._restart = ~first & ~ended_by_env & (self._num_steps >= self._limit)
        self._ended = ended_by_env | self._restart
        return self._time_step(rows, first, action, rows.terminated & ~first)

    def _time_step(self, rows: _Rows, first, action, terminated) -> TimeStep:
        """The batched ``TimeStep`` of ``rows`` (``first``: the rows that restarted)."""
        step_type = np.where(self._ended, StepType.LAST, StepType.MID).astype(np.int32)
        step_type[first] = StepType.FIRST
        discount = np.full(self._num_envs, self._discount, np.float32)
        discount[terminated] = 0.0
        discount[first] = 1.0
        reward = np.where(first, 0, rows.reward).astype(np.float32)
        prev_action = np.zeros(
            (self._num_envs, *self._action_spec.shape), self._action_spec.numpy_dtype
        )
        if action is not None:
            prev_action[~first] = action[~first]
        return TimeStep(
            step_type=torch.from_numpy(step_type),
            reward=torch.from_numpy(reward),
            discount=torch.from_numpy(discount),
            observation=_map(rows.observation, lambda value: torch.from_numpy(value)),
            prev_action=torch.from_numpy(prev_action),
            env_id=torch.from_numpy(self._rows.copy()),
            env_info={k: torch.from_numpy(v) for k, v in rows.env_info.items()},
        )

    def _action_array(self, action) -> np.ndarray:
        """The batched action as numpy ``[B, ...]`` of the spec's dtype, validated."""
        leaves = [to_numpy_leaf(leaf) for leaf in nest.flatten(action)]
        check_batched_leaves(leaves, [self._action_spec], self._num_envs)
        spec = self._action_spec
        array = leaves[0].astype(spec.numpy_dtype, copy=False)
        if spec.is_discrete and isinstance(spec, BoundedTensorSpec):
            bad = ((array < spec.minimum) | (array > spec.maximum)).reshape(self._num_envs, -1)
            bad = bad.any(axis=1) & ~self._ended  # rows after a LAST ignore their action
            if bad.any():
                row = int(np.argmax(bad))
                raise ValueError(
                    f"Action {array[row].tolist()} of row {row} is outside the action spec "
                    f"{spec} of envpool env {self._task_id}: value out of range"
                )
        if self._ended.any():  # envpool resets these rows; give it a valid action anyway
            array = array.copy()
            array[self._ended] = np.clip(0, spec.minimum, spec.maximum)
        return array

    def close(self) -> None:
        """Stop envpool's threads. Idempotent."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __repr__(self) -> str:
        return f"EnvpoolEnvironment({self._task_id}, num_envs={self._num_envs})"
