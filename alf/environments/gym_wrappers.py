"""gymnasium wrappers applied before ``AlfGymWrapper`` (``suite_gym.load(gym_env_wrappers=...)``).

- ``ImageChannelFirst``: ``[H, W, C]`` image observations → ``[C, H, W]``.
- ``NormalizedAction``: the agent acts in ``[-1, 1]``; actions are rescaled to the
  ``Box`` bounds.
- ``ContinuousActionClip``: clip ``Box`` actions into their bounds.
- ``FrameSkip``: repeat an action ``skip`` times, summing the rewards.
- ``FrameResize`` / ``FrameGrayScale``: resize / gray-scale ``[H, W, C]`` images
  (Pillow and numpy; no OpenCV needed).
- ``DMAtariPreprocessing``: Atari frame skip, max-pooling, 84x84 gray, no-op starts and
  FIRE (defined in ``atari_preprocessing``, importable from here as in ALF).
- ``ActionMaskFromInfo``: moves ``info["action_mask"]`` into a dict observation.
- ``MirrorWrapper``: declares the env's left/right mirror of observations and
  actions (``alf.utils.mirror.Mirror``) for the mirror loss; changes no data.

An *image* is a ``Box`` of rank 3 (``[H, W, C]``). Image wrappers act on the
observation if it is an image, or on every image inside a ``Dict`` / ``Tuple``
observation (``fields`` restricts them to some top-level keys of a ``Dict``).
Action wrappers act on every ``Box`` of a (possibly ``Dict`` / ``Tuple``) action
space and leave discrete parts alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from PIL import Image

import alf
from alf.environments.atari_preprocessing import DMAtariPreprocessing  # noqa: F401 (ALF's path)
from alf.utils.mirror import Mirror

# ----------------------------------------------------------------------------
# helpers mapping (space, value) pairs through nested Dict / Tuple spaces


def _map_space(space: spaces.Space, select: Callable, func: Callable) -> spaces.Space:
    """Replace every sub-space ``s`` with ``select(s)`` true by ``func(s)``."""
    if isinstance(space, spaces.Dict):
        return spaces.Dict({k: _map_space(s, select, func) for k, s in space.spaces.items()})
    if isinstance(space, spaces.Tuple):
        return spaces.Tuple([_map_space(s, select, func) for s in space.spaces])
    return func(space) if select(space) else space


def _map_value(space: spaces.Space, value, select: Callable, func: Callable):
    """Apply ``func(value, space)`` to every part of ``value`` whose space is selected."""
    if isinstance(space, spaces.Dict):
        return {k: _map_value(s, value[k], select, func) for k, s in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_map_value(s, v, select, func) for s, v in zip(space.spaces, value))
    return func(value, space) if select(space) else value


def _is_image(space: spaces.Space) -> bool:
    return isinstance(space, spaces.Box) and len(space.shape) == 3


def _is_box(space: spaces.Space) -> bool:
    return isinstance(space, spaces.Box)


def _image_selector(observation_space: spaces.Space, fields: Sequence[str] | None) -> Callable:
    """Selector of the image sub-spaces to transform (restricted to ``fields`` if given)."""
    if fields is None:
        return _is_image
    if not isinstance(observation_space, spaces.Dict):
        raise ValueError(f"fields={fields} needs a Dict observation space: {observation_space}")
    missing = set(fields) - set(observation_space.spaces)
    if missing:
        raise ValueError(f"fields {sorted(missing)} not in observation space {observation_space}")
    chosen = {id(observation_space.spaces[k]) for k in fields}
    return lambda space: id(space) in chosen and _is_image(space)


class _ImageObservationWrapper(gym.ObservationWrapper):
    """Base of the image wrappers: transform selected image parts of the observation.

    Subclasses implement ``_image_space(space)`` and ``_image(value, space)``
    (``space`` is the original image space).
    """

    def __init__(self, env: gym.Env, fields: Sequence[str] | None = None):
        super().__init__(env)
        self._select = _image_selector(env.observation_space, fields)
        self._input_space = env.observation_space
        self.observation_space = _map_space(env.observation_space, self._select, self._image_space)

    def _image_space(self, space: spaces.Box) -> spaces.Box:
        raise NotImplementedError

    def _image(self, image: np.ndarray, space: spaces.Box) -> np.ndarray:
        raise NotImplementedError

    def observation(self, observation):
        return _map_value(self._input_space, observation, self._select, self._image)


@alf.configurable
class ImageChannelFirst(_ImageObservationWrapper):
    """Transpose ``[H, W, C]`` image observations to contiguous ``[C, H, W]``.

    Args:
        env: the gymnasium env.
        fields: top-level keys of a ``Dict`` observation to transform (None: all images).
    """

    def _image_space(self, space: spaces.Box) -> spaces.Box:
        return spaces.Box(
            np.transpose(space.low, (2, 0, 1)),
            np.transpose(space.high, (2, 0, 1)),
            dtype=space.dtype,
        )

    def _image(self, image: np.ndarray, space: spaces.Box) -> np.ndarray:
        return np.ascontiguousarray(np.transpose(image, (2, 0, 1)))


_RESAMPLE = {
    "nearest": Image.Resampling.NEAREST,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "area": Image.Resampling.BOX,
    "lanczos": Image.Resampling.LANCZOS,
}


def _resize_image(image: np.ndarray, width: int, height: int, resample) -> np.ndarray:
    """Resize an ``[H, W, C]`` image to ``[height, width, C]`` with Pillow, keeping dtype."""
    if image.dtype == np.uint8 and image.shape[2] in (3, 4):
        resized = Image.fromarray(image).resize((width, height), resample)
        return np.asarray(resized)
    channels = []
    for c in range(image.shape[2]):
        plane = Image.fromarray(np.ascontiguousarray(image[:, :, c], dtype=np.float32), mode="F")
        channels.append(np.asarray(plane.resize((width, height), resample)))
    resized = np.stack(channels, axis=-1)
    if np.issubdtype(image.dtype, np.integer):
        info = np.iinfo(image.dtype)
        resized = np.clip(np.rint(resized), info.min, info.max)
    return resized.astype(image.dtype)


@alf.configurable
class FrameResize(_ImageObservationWrapper):
    """Resize ``[H, W, C]`` image observations to ``[height, width, C]``.

    Args:
        env: the gymnasium env.
        width: output width.
        height: output height.
        interpolation: one of ``'area'`` (Pillow BOX, default, good for
            down-sampling), ``'nearest'``, ``'bilinear'``, ``'bicubic'``, ``'lanczos'``.
        fields: top-level keys of a ``Dict`` observation to transform (None: all images).
    """

    def __init__(
        self,
        env: gym.Env,
        width: int = 84,
        height: int = 84,
        interpolation: str = "area",
        fields: Sequence[str] | None = None,
    ):
        if interpolation not in _RESAMPLE:
            raise ValueError(f"interpolation must be one of {sorted(_RESAMPLE)}")
        self._width, self._height = int(width), int(height)
        self._resample = _RESAMPLE[interpolation]
        super().__init__(env, fields)

    def _image_space(self, space: spaces.Box) -> spaces.Box:
        shape = (self._height, self._width, space.shape[2])
        low = np.full(shape, space.low.min(), dtype=space.dtype)
        high = np.full(shape, space.high.max(), dtype=space.dtype)
        return spaces.Box(low, high, dtype=space.dtype)

    def _image(self, image: np.ndarray, space: spaces.Box) -> np.ndarray:
        return _resize_image(image, self._width, self._height, self._resample)


_GRAY_WEIGHTS = np.array([0.299, 0.587, 0.114], dtype=np.float32)  # ITU-R BT.601 luma


@alf.configurable
class FrameGrayScale(_ImageObservationWrapper):
    """Convert ``[H, W, 3]`` RGB image observations to ``[H, W, 1]`` gray (BT.601 luma).

    ``gray = 0.299 R + 0.587 G + 0.114 B``, rounded for integer images.

    Args:
        env: the gymnasium env.
        fields: top-level keys of a ``Dict`` observation to transform (None: all
            RGB images).
    """

    def __init__(self, env: gym.Env, fields: Sequence[str] | None = None):
        super().__init__(env, fields)

    def _image_space(self, space: spaces.Box) -> spaces.Box:
        if space.shape[2] != 3:
            raise ValueError(f"FrameGrayScale needs [H, W, 3] images, got {space}")
        shape = space.shape[:2] + (1,)
        low = np.full(shape, space.low.min(), dtype=space.dtype)
        high = np.full(shape, space.high.max(), dtype=space.dtype)
        return spaces.Box(low, high, dtype=space.dtype)

    def _image(self, image: np.ndarray, space: spaces.Box) -> np.ndarray:
        gray = image.astype(np.float32) @ _GRAY_WEIGHTS
        if np.issubdtype(image.dtype, np.integer):
            gray = np.rint(gray)
        return gray[:, :, None].astype(image.dtype)


# ----------------------------------------------------------------------------
# actions


def _leaf_spaces(space: spaces.Space) -> list[spaces.Space]:
    """The non-``Dict`` / non-``Tuple`` sub-spaces of ``space``."""
    if isinstance(space, spaces.Dict):
        return [leaf for s in space.spaces.values() for leaf in _leaf_spaces(s)]
    if isinstance(space, spaces.Tuple):
        return [leaf for s in space.spaces for leaf in _leaf_spaces(s)]
    return [space]


@alf.configurable
class NormalizedAction(gym.ActionWrapper):
    """The agent acts in ``[-1, 1]``; each ``Box`` action is rescaled to its bounds.

    ``a_env = low + (a + 1) / 2 * (high - low)``, so -1 → ``low`` and 1 → ``high``.
    Values outside ``[-1, 1]`` map outside the bounds (clip with
    ``ContinuousActionClip`` applied before this wrapper, i.e. as the outer one,
    if needed). Discrete parts of the action pass unchanged.

    Args:
        env: the gymnasium env; its ``Box`` action bounds must be finite.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._env_action_space = env.action_space
        for space in filter(_is_box, _leaf_spaces(env.action_space)):
            if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
                raise ValueError(f"NormalizedAction needs finite Box bounds, got {space}")
        self.action_space = _map_space(env.action_space, _is_box, self._unit_box)

    @staticmethod
    def _unit_box(space: spaces.Box) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, shape=space.shape, dtype=space.dtype)

    @staticmethod
    def _rescale(action, space: spaces.Box) -> np.ndarray:
        low, high = space.low, space.high
        action = np.asarray(action, dtype=space.dtype)
        return (low + (action + 1.0) * 0.5 * (high - low)).astype(space.dtype)

    def action(self, action):
        return _map_value(self._env_action_space, action, _is_box, self._rescale)


@alf.configurable
class ContinuousActionClip(gym.ActionWrapper):
    """Clip every ``Box`` action into its bounds before it reaches the env.

    Args:
        env: the gymnasium env.
    """

    @staticmethod
    def _clip(action, space: spaces.Box) -> np.ndarray:
        return np.clip(np.asarray(action, dtype=space.dtype), space.low, space.high)

    def action(self, action):
        return _map_value(self.env.action_space, action, _is_box, self._clip)


@alf.configurable
class FrameSkip(gym.Wrapper):
    """Repeat each action ``skip`` times and sum the rewards.

    Stops early when the env reports ``terminated`` or ``truncated``; returns the
    last observation and info of the repeated steps.

    Args:
        env: the gymnasium env.
        skip: number of times each action is applied (>= 1).
    """

    def __init__(self, env: gym.Env, skip: int):
        if skip < 1:
            raise ValueError(f"FrameSkip needs skip >= 1, got {skip}")
        super().__init__(env)
        self._skip = int(skip)

    def step(self, action):
        total_reward = 0.0
        for _ in range(self._skip):
            observation, reward, terminated, truncated, info = self.env.step(action)
            total_reward += reward
            if terminated or truncated:
                break
        return observation, total_reward, terminated, truncated, info


@alf.configurable
class MirrorWrapper(gym.Wrapper):
    """Declare how to mirror the env's observations and actions (for the mirror loss).

    Passes every step through unchanged. It validates ``mirror`` against the env's
    spaces (both must be flat ``Box`` vectors of the mirrored sizes) and exposes it as
    ``mirror`` and as ``mirror_observation_indices``, ``mirror_observation_signs``,
    ``mirror_action_indices``, ``mirror_action_signs`` (read them through any outer
    wrapper with ``env.get_wrapper_attr(name)`` or ``mirror_of(env)``).

    The algorithm does not read the env: give the same ``Mirror`` to
    ``PPOLoss(mirror=..., mirror_loss_coeff=...)`` (see
    ``alf/examples/ppo_mirror_walker_conf.py``). Abdolhosseini et al. 2019,
    "On Learning Symmetric Locomotion".

    Args:
        env: the gymnasium env (observation and action: flat ``Box``).
        mirror: the env's mirror maps.
    """

    def __init__(self, env: gym.Env, mirror: Mirror):
        super().__init__(env)
        if not isinstance(mirror, Mirror):
            raise TypeError(f"MirrorWrapper needs an alf.utils.mirror.Mirror, got {mirror!r}")
        owner = f"MirrorWrapper({env.spec.id if env.spec else type(env.unwrapped).__name__})"
        for space, what in ((env.observation_space, "observation"), (env.action_space, "action")):
            if not isinstance(space, spaces.Box):
                raise ValueError(f"{owner}: the {what} space must be a flat Box, got {space}")
        mirror.check_specs(env.observation_space, env.action_space, owner)
        self._mirror = mirror

    @property
    def mirror(self) -> Mirror:
        return self._mirror

    @property
    def mirror_observation_indices(self) -> np.ndarray:
        return self._mirror.observation.indices

    @property
    def mirror_observation_signs(self) -> np.ndarray:
        return self._mirror.observation.signs

    @property
    def mirror_action_indices(self) -> np.ndarray:
        return self._mirror.action.indices

    @property
    def mirror_action_signs(self) -> np.ndarray:
        return self._mirror.action.signs


def mirror_of(env: gym.Env) -> Mirror | None:
    """The ``Mirror`` declared by a ``MirrorWrapper`` anywhere in ``env``'s wrapper chain."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, MirrorWrapper):
            return env.mirror
        env = env.env
    return None


@alf.configurable
class ActionMaskFromInfo(gym.Wrapper):
    """Move gymnasium's ``info['action_mask']`` (``Taxi-v4``'s convention) into the
    observation, where alf's algorithms read it (``alf/utils/action_mask.py``).

    A ``Dict`` observation gets the field ``action_mask``; any other observation ``o``
    becomes ``{'observation': o, 'action_mask': mask}``. The mask (``[n]`` ``int8``, 1 for
    a legal action) leaves the info. A mask with no legal action at a step that does not
    end the episode is a ``ValueError`` naming the env.

    Args:
        env: a gymnasium env with a ``Discrete(n)`` action space whose ``reset`` and
            ``step`` infos hold ``action_mask``.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._env_name = env.spec.id if env.spec else type(env.unwrapped).__name__
        if not isinstance(env.action_space, spaces.Discrete):
            raise ValueError(
                f"ActionMaskFromInfo({self._env_name}): needs a Discrete action space, got "
                f"{env.action_space}"
            )
        mask_space = spaces.Box(0, 1, (int(env.action_space.n),), np.int8)
        if isinstance(env.observation_space, spaces.Dict):
            fields = dict(env.observation_space.spaces)
        else:
            fields = {"observation": env.observation_space}
        self.observation_space = spaces.Dict({**fields, "action_mask": mask_space})

    def _observation(self, observation, info: dict, ends: bool):
        if "action_mask" not in info:
            raise ValueError(f"ActionMaskFromInfo({self._env_name}): no info['action_mask']")
        info = dict(info)
        mask = np.asarray(info.pop("action_mask"), dtype=np.int8)
        if not ends and not mask.any():
            raise ValueError(
                f"ActionMaskFromInfo({self._env_name}): info['action_mask'] has no legal action"
            )
        if isinstance(self.env.observation_space, spaces.Dict):
            return {**observation, "action_mask": mask}, info
        return {"observation": observation, "action_mask": mask}, info

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        return self._observation(observation, info, False)

    def step(self, action):
        # a plain int: toy-text envs index tables with it (alf passes a 0-d array)
        observation, reward, terminated, truncated, info = self.env.step(int(action))
        observation, info = self._observation(observation, info, terminated or truncated)
        return observation, reward, terminated, truncated, info
