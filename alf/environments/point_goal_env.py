"""``PointGoal-v0``: a point mass reaching a goal in 2-D, with sparse reward (for HER).

A self-contained stand-in for the gymnasium-robotics goal tasks (e.g. FetchReach):
the same dict observation (``observation``, ``achieved_goal``, ``desired_goal``),
the same sparse reward convention (0 when the achieved goal is within
``distance_threshold`` of the desired goal, -1 otherwise), a vectorized
``compute_reward(achieved_goal, desired_goal, info)``, and ``info['is_success']``.

Dynamics: the position ``p`` lives in ``[-1, 1]^2``; an action ``a`` in
``[-1, 1]^2`` moves it to ``clip(p + max_step * a, -1, 1)``. The start and the
goal are uniform in the square. Episodes never terminate; they are truncated
after 50 steps (registered ``max_episode_steps``), so every step bootstraps.

Registered at import: ``suite_gym.load('alf.environments.point_goal_env:PointGoal-v0')``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

_MODULE = "alf.environments.point_goal_env"


class PointGoalEnv(gym.Env):
    """A point mass moved by bounded displacements towards a random goal.

    Args:
        distance_threshold: success radius around the goal.
        max_step: largest displacement per step along each axis.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(self, distance_threshold: float = 0.05, max_step: float = 0.1, render_mode=None):
        self.distance_threshold = float(distance_threshold)
        self._max_step = float(max_step)
        box = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.observation_space = spaces.Dict(
            {"observation": box, "achieved_goal": box, "desired_goal": box}
        )
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.render_mode = render_mode
        self._position = np.zeros(2, np.float32)
        self._goal = np.zeros(2, np.float32)

    def compute_reward(self, achieved_goal, desired_goal, info=None) -> np.ndarray:
        """``[...]`` rewards of ``[..., 2]`` goals: 0 within the threshold, else -1."""
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return -(distance > self.distance_threshold).astype(np.float32)

    def _observation(self) -> dict:
        return {
            "observation": self._position.copy(),
            "achieved_goal": self._position.copy(),
            "desired_goal": self._goal.copy(),
        }

    def _info(self) -> dict:
        distance = float(np.linalg.norm(self._position - self._goal))
        return {"is_success": np.float32(distance <= self.distance_threshold)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._position = self.np_random.uniform(-1.0, 1.0, 2).astype(np.float32)
        self._goal = self.np_random.uniform(-1.0, 1.0, 2).astype(np.float32)
        return self._observation(), self._info()

    def step(self, action):
        action = np.clip(np.asarray(action, np.float32).reshape(2), -1.0, 1.0)
        self._position = np.clip(self._position + self._max_step * action, -1.0, 1.0)
        reward = float(self.compute_reward(self._position, self._goal))
        return self._observation(), reward, False, False, self._info()

    def render(self):
        """A 64x64 RGB frame: the goal in green, the point in red."""
        frame = np.full((64, 64, 3), 255, np.uint8)
        for xy, color in ((self._goal, (0, 160, 0)), (self._position, (200, 0, 0))):
            col, row = ((np.asarray(xy) + 1.0) * 31.5).astype(int)
            frame[max(row - 1, 0) : row + 2, max(col - 1, 0) : col + 2] = color
        return frame


if "PointGoal-v0" not in gym.envs.registry:
    gym.register(id="PointGoal-v0", entry_point=f"{_MODULE}:PointGoalEnv", max_episode_steps=50)
