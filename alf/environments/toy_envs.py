"""Small toy gymnasium environments for tests, registered at import.

Every env here is registered with gymnasium under its class name, so the id
``'alf.environments.toy_envs:CountingEnv-v0'`` works in any process: gymnasium
imports this module (which registers the ids) before looking the id up, and the
entry points are module paths, never objects living only in the parent.

- ``CountingEnv-v0``: observation = number of steps taken, reward at ``t`` = the
  (discrete) action taken at ``t-1``; ends by termination at ``terminate_at``
  steps and/or by truncation at ``truncate_at`` steps.
- ``ContinuousCountingEnv-v0``: the same with a ``Box`` action; reward = sum of
  the action; ``info['last_action']`` echoes the action the env received.
- ``RandomStartEnv-v0``: a random walk whose start (and noise) depend on the
  reset seed, for same-seed / different-seed tests (time limit 50 steps).
- ``ImageEnv-v0``: ``[H, W, 3]`` uint8 image observations (a deterministic
  gradient that moves with the step count) for image wrapper tests.
- ``MirrorPointEnv-v0``: a 2-D point steered to the origin, symmetric under
  ``x -> -x`` (``MIRROR_POINT_MIRROR``), for mirror-loss tests.
- ``BrokenEnv-v0``: its constructor raises ``RuntimeError`` (subprocess error tests).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from alf.utils.mirror import Mirror

_MODULE = "alf.environments.toy_envs"


def _ends(count: int, terminate_at: int | None, truncate_at: int | None) -> tuple[bool, bool]:
    """``(terminated, truncated)`` after ``count`` steps."""
    terminated = terminate_at is not None and count >= terminate_at
    truncated = truncate_at is not None and count >= truncate_at
    return bool(terminated), bool(truncated)


class CountingEnv(gym.Env):
    """Observation = steps taken; reward at ``t`` = the action taken at ``t-1``.

    Args:
        terminate_at: the episode terminates (``terminated=True``) after this many
            steps; None for never.
        truncate_at: the episode is truncated (``truncated=True``) after this many
            steps; None for never. When both fire at once, both flags are set.
        num_actions: size of the ``Discrete`` action space.
        obs_dtype: dtype of the ``[1]`` observation (float64 exercises casting).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(
        self,
        terminate_at: int | None = 5,
        truncate_at: int | None = None,
        num_actions: int = 4,
        obs_dtype=np.float32,
        render_mode: str | None = None,
    ):
        self._terminate_at = terminate_at
        self._truncate_at = truncate_at
        self._obs_dtype = np.dtype(obs_dtype)
        self.observation_space = spaces.Box(0.0, np.inf, shape=(1,), dtype=self._obs_dtype)
        self.action_space = spaces.Discrete(num_actions)
        self.render_mode = render_mode
        self._count = 0

    def _obs(self) -> np.ndarray:
        return np.array([self._count], dtype=self._obs_dtype)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._count = 0
        return self._obs(), {"count": self._count}

    def step(self, action):
        action = int(action)
        if not self.action_space.contains(action):
            raise ValueError(f"CountingEnv got an invalid action {action}")
        self._count += 1
        terminated, truncated = _ends(self._count, self._terminate_at, self._truncate_at)
        return self._obs(), float(action), terminated, truncated, {"count": self._count}

    def render(self):
        """A ``[8, 8, 3]`` uint8 frame whose red channel is the step count."""
        frame = np.zeros((8, 8, 3), dtype=np.uint8)
        frame[..., 0] = min(self._count, 255)
        return frame


class ContinuousCountingEnv(gym.Env):
    """``CountingEnv`` with a ``Box`` action: reward at ``t`` = sum of the action at ``t-1``.

    Args:
        terminate_at: terminate after this many steps (None: never).
        truncate_at: truncate after this many steps (None: never).
        action_low: lower bound(s) of the ``[action_dim]`` action.
        action_high: upper bound(s) of the action.
        action_dim: size of the action.
    """

    def __init__(
        self,
        terminate_at: int | None = 5,
        truncate_at: int | None = None,
        action_low=-1.0,
        action_high=3.0,
        action_dim: int = 2,
    ):
        self._terminate_at = terminate_at
        self._truncate_at = truncate_at
        self.observation_space = spaces.Box(0.0, np.inf, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Box(
            np.broadcast_to(np.asarray(action_low, np.float32), (action_dim,)),
            np.broadcast_to(np.asarray(action_high, np.float32), (action_dim,)),
            dtype=np.float32,
        )
        self._count = 0
        self._action_dim = action_dim

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._count = 0
        info = {"last_action": np.zeros(self._action_dim, np.float32)}
        return np.array([0.0], np.float32), info

    def step(self, action):
        action = np.asarray(action, dtype=np.float32).reshape(self._action_dim)
        self._count += 1
        terminated, truncated = _ends(self._count, self._terminate_at, self._truncate_at)
        obs = np.array([self._count], np.float32)
        info = {"last_action": action.copy()}
        return obs, float(action.sum()), terminated, truncated, info


class RandomStartEnv(gym.Env):
    """A random walk whose start and noise come from the reset seed.

    The state starts uniform in ``[-1, 1]^dim``; each step adds ``0.1 * (action - 0.5)``
    and Gaussian noise of std 0.1; reward is ``-|state|_1``. Terminates after
    ``episode_length`` steps.

    Args:
        dim: size of the observation.
        episode_length: number of steps before termination.
    """

    def __init__(self, dim: int = 3, episode_length: int = 10):
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(dim,), dtype=np.float64)
        self.action_space = spaces.Discrete(2)
        self._dim = dim
        self._episode_length = episode_length
        self._state = np.zeros(dim)
        self._count = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._state = self.np_random.uniform(-1.0, 1.0, size=self._dim)
        self._count = 0
        return self._state.copy(), {}

    def step(self, action):
        noise = self.np_random.normal(0.0, 0.1, size=self._dim)
        self._state = self._state + 0.1 * (int(action) - 0.5) + noise
        self._count += 1
        terminated = self._count >= self._episode_length
        return self._state.copy(), -float(np.abs(self._state).sum()), terminated, False, {}


class ImageEnv(gym.Env):
    """``[height, width, 3]`` uint8 images; terminates after ``terminate_at`` steps.

    Pixel ``(y, x, c)`` is ``(10 * y + 3 * x + 50 * c + count) % 256``, so image
    wrappers can be checked against numbers. Reward is 1 per step.

    Args:
        height: image height.
        width: image width.
        terminate_at: number of steps before termination.
        dict_obs: return ``{'image': img, 'count': [count]}`` instead of the image.
    """

    def __init__(
        self, height: int = 6, width: int = 8, terminate_at: int = 10, dict_obs: bool = False
    ):
        image_space = spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8)
        if dict_obs:
            count_space = spaces.Box(0.0, np.inf, shape=(1,), dtype=np.float32)
            self.observation_space = spaces.Dict({"image": image_space, "count": count_space})
        else:
            self.observation_space = image_space
        self.action_space = spaces.Discrete(2)
        self._shape = (height, width)
        self._terminate_at = terminate_at
        self._dict_obs = dict_obs
        self._count = 0

    def image(self, count: int) -> np.ndarray:
        """The image shown after ``count`` steps, ``[H, W, 3]`` uint8."""
        y, x, c = np.meshgrid(
            np.arange(self._shape[0]), np.arange(self._shape[1]), np.arange(3), indexing="ij"
        )
        return ((10 * y + 3 * x + 50 * c + count) % 256).astype(np.uint8)

    def _obs(self):
        image = self.image(self._count)
        if self._dict_obs:
            return {"image": image, "count": np.array([self._count], np.float32)}
        return image

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._count = 0
        return self._obs(), {}

    def step(self, action):
        self._count += 1
        return self._obs(), 1.0, self._count >= self._terminate_at, False, {}


class ImageCueEnv(gym.Env):
    """A small image task that needs vision: say on which side of the image the bright
    square is.

    Each observation is a ``[size, size, 3]`` uint8 image (``suite_gym`` hands alf
    ``[3, size, size]``), black but for a
    2x2 white square at a random place (from the reset seed) in the left or the right half;
    action 0 says left, 1 right; reward 1 for the right answer, 0 otherwise; a new image each
    step; terminates after ``episode_length`` steps. The optimum is ``episode_length``,
    guessing gives half of it.

    Args:
        size: image height and width (even, at least 4).
        episode_length: number of steps before termination.
    """

    def __init__(self, size: int = 8, episode_length: int = 8):
        if size < 4 or size % 2:
            raise ValueError(f"ImageCueEnv: size must be even and at least 4, got {size}")
        self.observation_space = spaces.Box(0, 255, shape=(size, size, 3), dtype=np.uint8)
        self.action_space = spaces.Discrete(2)
        self._size, self._episode_length = size, episode_length
        self._count, self._side = 0, 0

    def _obs(self):
        half = self._size // 2
        self._side = int(self.np_random.integers(2))
        y = int(self.np_random.integers(self._size - 1))
        x = self._side * half + int(self.np_random.integers(half - 1))
        image = np.zeros((self._size, self._size, 3), np.uint8)
        image[y : y + 2, x : x + 2] = 255
        return image

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._count = 0
        return self._obs(), {}

    def step(self, action):
        reward = float(int(action) == self._side)
        self._count += 1
        return self._obs(), reward, self._count >= self._episode_length, False, {}


class MirrorPointEnv(gym.Env):
    """A point in the plane steered toward the origin; symmetric under ``x -> -x``.

    Observation ``(x, y)``, starting uniform in ``[-1, 1]^2`` (from the reset seed);
    action ``(dx, dy)`` in ``[-1, 1]^2`` moves the point by ``0.1 * action``; reward
    ``-|(x, y)|_2`` after the move; terminates after ``episode_length`` steps. The
    dynamics and reward commute with the reflection ``x -> -x``, ``dx -> -dx``
    (``MIRROR_POINT_MIRROR``), so the optimal policy is mirror-symmetric.

    Args:
        episode_length: number of steps before termination.
    """

    def __init__(self, episode_length: int = 10):
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self._episode_length = episode_length
        self._position = np.zeros(2)
        self._count = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._position = self.np_random.uniform(-1.0, 1.0, size=2)
        self._count = 0
        return self._position.astype(np.float32), {}

    def step(self, action):
        action = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        self._position = self._position + 0.1 * action
        self._count += 1
        reward = -float(np.linalg.norm(self._position))
        terminated = self._count >= self._episode_length
        return self._position.astype(np.float32), reward, terminated, False, {}


#: ``MirrorPointEnv``'s reflection ``x -> -x``: observation ``(x, y) -> (-x, y)``,
#: action ``(dx, dy) -> (-dx, dy)``.
MIRROR_POINT_MIRROR = Mirror(
    observation_indices=[0, 1],
    action_indices=[0, 1],
    observation_signs=[-1, 1],
    action_signs=[-1, 1],
    name="MirrorPointEnv",
)


class BrokenEnv(gym.Env):
    """An env whose constructor always raises ``RuntimeError`` (for error-path tests)."""

    def __init__(self, **kwargs):
        raise RuntimeError("BrokenEnv constructor failed on purpose")


def _register(name: str, max_episode_steps: int | None = None) -> None:
    env_id = f"{name}-v0"
    if env_id not in gym.envs.registry:
        gym.register(
            id=env_id, entry_point=f"{_MODULE}:{name}", max_episode_steps=max_episode_steps
        )


_register("CountingEnv")
_register("ContinuousCountingEnv")
_register("RandomStartEnv", max_episode_steps=50)
_register("ImageEnv")
_register("ImageCueEnv")
_register("MirrorPointEnv")
_register("BrokenEnv")
