"""``AlfGymWrapper``: a gymnasium env as an unbatched ``AlfEnvironment`` (numpy nests).

Mapping of gymnasium's step result onto the discount table (docs/design.md, section 3):

- ``reset()`` → FIRST, reward 0, discount 1, ``prev_action`` zeros;
- ``terminated`` → LAST with discount 0 (``termination``);
- ``truncated`` and not ``terminated`` → LAST with discount ``discount`` (1 by
  default), so values bootstrap over time limits (``truncation``);
- otherwise MID with discount ``discount``.

The step after a LAST ignores its action and returns a new FIRST (auto reset,
done by ``AlfEnvironment.step``).

``env_info`` rule. The spec of ``TimeStep.env_info`` must be known before the
first FIRST is returned, so it is decided once, lazily (on the first
``env_info_spec()`` or ``reset()``), by probing the env: one ``reset()`` and one
``step()`` with the zero action (clipped into the action bounds), then the env
is reset again by the real ``reset()``. The spec holds the numeric (bool, int,
float; scalar or array) entries of the union of both infos. Dropped: non-numeric
entries (strings, objects, nested dicts) and "varying" keys whose shape or dtype
differ between the two probes. Afterwards every ``env_info`` has exactly these
keys: a key missing from a later info is filled with zeros, a key unknown to the
spec is ignored, and a value that no longer fits its spec's shape raises
``ValueError``. Floats are stored as ``float_dtype`` (float32), ints as int64,
bools as bool.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np

import alf
from alf.data_structures import restart, termination, transition, truncation
from alf.environments.alf_environment import AlfEnvironment
from alf.tensor_specs import BoundedTensorSpec, TensorSpec, tensor_spec_from_gym_space


def env_name_of(gym_env: gym.Env) -> str:
    """The registered id of ``gym_env`` or, when unregistered, its class name."""
    spec = getattr(gym_env, "spec", None)
    if spec is not None and getattr(spec, "id", None):
        return spec.id
    return type(gym_env.unwrapped).__name__


# ----------------------------------------------------------------------------
# converters built once at construction (the per-step path calls only these)


def _nest_converter(spec_nest, leaf_converter: Callable) -> Callable:
    """A function converting a value nest shaped like ``spec_nest`` leaf by leaf.

    Built once, so the per-step call costs a few python calls and no tree
    traversal library. ``leaf_converter(spec, path)`` returns the leaf function.
    """

    def build(spec, path):
        if isinstance(spec, dict):
            subs = {k: build(s, f"{path}.{k}" if path else str(k)) for k, s in spec.items()}
            return lambda value: {k: f(value[k]) for k, f in subs.items()}
        if isinstance(spec, (list, tuple)):
            subs = [build(s, f"{path}.{i}" if path else str(i)) for i, s in enumerate(spec)]
            return lambda value: tuple(f(v) for f, v in zip(subs, value))
        return leaf_converter(spec, path)

    return build(spec_nest, "")


def _observation_leaf_converter(spec: TensorSpec, path: str) -> Callable:
    dtype = spec.numpy_dtype
    return lambda value: np.asarray(value, dtype=dtype)


def _action_error(value, spec: TensorSpec, path: str, env_desc: str, reason: str) -> ValueError:
    where = f" (action field '{path}')" if path else ""
    shown = np.asarray(value).tolist()
    return ValueError(
        f"Action {shown}{where} is outside the action spec {spec} of env {env_desc}: {reason}"
    )


def _make_action_leaf_converter(env_desc: str) -> Callable:
    """A ``leaf_converter`` that casts an action leaf to its spec and validates it.

    Discrete leaves must lie within the bounds; every leaf must have the spec's
    shape. Continuous values out of bounds pass (see ``ContinuousActionClip``).
    """

    def leaf_converter(spec: TensorSpec, path: str) -> Callable:
        dtype, shape = spec.numpy_dtype, tuple(spec.shape)
        bounded = spec.is_discrete and isinstance(spec, BoundedTensorSpec)
        low, high = (spec.minimum, spec.maximum) if bounded else (None, None)

        def out_of_range(array: np.ndarray) -> bool:
            if not bounded:
                return False
            if array.ndim == 0:
                return not low <= array <= high
            return bool((array < low).any() or (array > high).any())

        def convert(value):
            array = np.asarray(value)
            if array.shape != shape:
                reason = f"shape {array.shape} != spec shape {shape}"
                raise _action_error(value, spec, path, env_desc, reason)
            if out_of_range(array):
                raise _action_error(value, spec, path, env_desc, "value out of range")
            return array.astype(dtype)

        return convert

    return leaf_converter


# ----------------------------------------------------------------------------
# env_info


def _info_leaf(value, float_dtype) -> np.ndarray | None:
    """``value`` as a numeric numpy array, or None if it is not numeric."""
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        array = np.asarray(value)
    elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        array = value
    else:
        return None
    if array.dtype.kind == "f":
        return array.astype(float_dtype)
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    return array


def _numeric_info(info: dict, float_dtype) -> dict[str, np.ndarray]:
    arrays = {}
    for key, value in info.items():
        array = _info_leaf(value, float_dtype)
        if array is not None:
            arrays[key] = array
    return arrays


def env_info_spec_from_infos(infos: list[dict], float_dtype=np.float32) -> dict[str, TensorSpec]:
    """The ``env_info`` spec of a list of probed infos (see the module docstring).

    Args:
        infos: info dicts (e.g. from one ``reset`` and one ``step``).
        float_dtype: dtype floats are stored as.

    Returns:
        A dict ``key -> TensorSpec``, keys in order of first appearance.
    """
    specs: dict[str, TensorSpec] = {}
    varying: set[str] = set()
    for info in infos:
        for key, array in _numeric_info(info, float_dtype).items():
            spec = TensorSpec(array.shape, array.dtype)
            if key in specs and specs[key] != spec:
                varying.add(key)
            specs.setdefault(key, spec)
    return {k: s for k, s in specs.items() if k not in varying}


def _make_info_converter(info_spec: dict[str, TensorSpec], env_desc: str) -> Callable:
    if not info_spec:
        return lambda info: {}
    items = [(k, s.numpy_dtype, tuple(s.shape), s.numpy_zeros()) for k, s in info_spec.items()]

    def convert(info: dict) -> dict:
        env_info = {}
        for key, dtype, shape, zeros in items:
            value = info.get(key)
            if value is None:
                env_info[key] = zeros.copy()
                continue
            array = np.asarray(value, dtype=dtype)
            if array.shape != shape:
                raise ValueError(
                    f"env_info['{key}'] of env {env_desc} has shape {array.shape}, but its spec "
                    f"(decided at the first step) has shape {shape}"
                )
            env_info[key] = array
        return env_info

    return convert


# ----------------------------------------------------------------------------


def _reward_spec_of(gym_env: gym.Env) -> TensorSpec:
    """Vector reward spec if the env declares ``reward_space`` or ``reward_dim``, else scalar."""
    for name in ("reward_space", "reward_dim"):
        try:
            value = gym_env.get_wrapper_attr(name)
        except AttributeError:
            continue
        if isinstance(value, gym.spaces.Box):
            return TensorSpec(value.shape, np.float32)
        if isinstance(value, (int, np.integer)) and value > 1:
            return TensorSpec((int(value),), np.float32)
    return TensorSpec((), np.float32)


def _zero_actions(action_spec):
    """Zero actions clipped into the bounds, for a nest of action specs (numpy)."""
    if isinstance(action_spec, dict):
        return {k: _zero_actions(s) for k, s in action_spec.items()}
    if isinstance(action_spec, (list, tuple)):
        return tuple(_zero_actions(s) for s in action_spec)
    zeros = action_spec.numpy_zeros()
    return np.clip(zeros, action_spec.minimum, action_spec.maximum).astype(zeros.dtype)


@alf.configurable
class AlfGymWrapper(AlfEnvironment):
    """Adapts a gymnasium env to the unbatched ``AlfEnvironment`` interface.

    Observations, actions and ``env_info`` are numpy nests; observations are
    cast to the observation spec (float boxes become ``float_dtype``). The
    ``prev_action`` of a step is the action applied, cast to the action spec.
    Actions are validated: a wrong shape or an out-of-range discrete value raises
    ``ValueError`` naming the env and the spec; continuous values out of bounds
    are passed to the env unchanged.

    Args:
        gym_env: the gymnasium env (already wrapped by gym wrappers).
        env_id: id of this env, stored in ``TimeStep.env_id``.
        discount: discount of MID steps and of truncated LAST steps (1 by
            default); terminated LAST steps always have discount 0.
        float_dtype: dtype of float observations (None keeps the space's dtype).
        probe_env_info: decide the ``env_info`` spec from one probing reset and
            step (see module docstring); if False, ``env_info`` is always empty.
    """

    def __init__(
        self,
        gym_env: gym.Env,
        env_id: int = 0,
        discount: float = 1.0,
        float_dtype=np.float32,
        probe_env_info: bool = True,
    ):
        super().__init__()
        self._gym_env = gym_env
        self._env_id = np.int32(0 if env_id is None else env_id)
        self._discount = float(discount)
        self._float_dtype = float_dtype
        self._probe_env_info = probe_env_info
        self._next_seed = None
        self._observation_spec = tensor_spec_from_gym_space(gym_env.observation_space, float_dtype)
        self._action_spec = tensor_spec_from_gym_space(gym_env.action_space, float_dtype)
        self._reward_spec = _reward_spec_of(gym_env)
        self._env_desc = f"{env_name_of(gym_env)} (env_id={int(self._env_id)})"
        self._convert_observation = _nest_converter(
            self._observation_spec, _observation_leaf_converter
        )
        self._convert_action = _nest_converter(
            self._action_spec, _make_action_leaf_converter(self._env_desc)
        )
        self._env_info_spec = None
        self._convert_info = None

    # -- description -----------------------------------------------------------

    @property
    def gym(self) -> gym.Env:
        """The wrapped gymnasium env."""
        return self._gym_env

    @property
    def env_id(self) -> int:
        return int(self._env_id)

    def observation_spec(self):
        return self._observation_spec

    def action_spec(self):
        return self._action_spec

    def reward_spec(self) -> TensorSpec:
        return self._reward_spec

    def env_info_spec(self):
        self._ensure_env_info_spec()
        return self._env_info_spec

    def _ensure_env_info_spec(self) -> None:
        if self._env_info_spec is not None:
            return
        infos = []
        if self._probe_env_info:
            _, reset_info = self._gym_env.reset()
            step_info = self._gym_env.step(_zero_actions(self._action_spec))[4]
            infos = [reset_info, step_info]
        self._env_info_spec = env_info_spec_from_infos(infos, self._float_dtype)
        self._convert_info = _make_info_converter(self._env_info_spec, self._env_desc)

    # -- running -----------------------------------------------------------------

    def _reset(self):
        self._ensure_env_info_spec()
        seed, self._next_seed = self._next_seed, None
        observation, info = self._gym_env.reset(seed=seed)
        return restart(
            self._convert_observation(observation),
            self._action_spec,
            reward_spec=self._reward_spec,
            env_id=self._env_id,
            env_info=self._convert_info(info),
        )

    def _step(self, action):
        action = self._convert_action(action)
        observation, reward, terminated, truncated, info = self._gym_env.step(action)
        observation = self._convert_observation(observation)
        env_info = self._convert_info(info)
        if terminated:
            return termination(observation, action, reward, self._env_id, env_info)
        if truncated:
            return truncation(observation, action, reward, self._discount, self._env_id, env_info)
        return transition(observation, action, reward, self._discount, self._env_id, env_info)

    def seed(self, seed: int) -> None:
        """Seed the env: the next ``reset`` calls ``reset(seed=seed)``; seeds the action space.

        A seed set mid-episode takes effect at the next reset (after the LAST).
        """
        self._next_seed = int(seed)
        self._gym_env.action_space.seed(int(seed))

    def render(self, mode: str = "rgb_array"):
        """The gymnasium ``render()`` frame, ``[H, W, 3]`` uint8 for ``'rgb_array'``.

        The env must have been made with ``render_mode=mode`` (``suite_gym.load(...,
        render_mode='rgb_array')``).
        """
        render_mode = getattr(self._gym_env, "render_mode", None)
        if render_mode != mode:
            raise ValueError(
                f"Cannot render env {self._env_desc} in mode '{mode}': it was made with "
                f"render_mode={render_mode!r}; load it with render_mode='{mode}'"
            )
        return self._gym_env.render()

    def close(self) -> None:
        if self._gym_env is not None:
            self._gym_env.close()
            self._gym_env = None

    def __repr__(self) -> str:
        return f"AlfGymWrapper({self._env_desc})"
