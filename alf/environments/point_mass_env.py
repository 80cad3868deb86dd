"""``PointMass-v0``: a 2-D point mass without reward, for unsupervised skill discovery (DIAYN).

The observation is the position ``p = (x, y)`` in ``[-1, 1]^2``; every episode starts at
the origin; an action ``a`` in ``[-1, 1]^2`` (a velocity) moves the point to
``clip(p + max_step * a, -1, 1)``. The reward is always 0 and episodes never terminate:
they are truncated after ``max_episode_steps`` (registered: 30), so every step bootstraps.
Skills are told apart by where they take the point.

Registered at import: ``suite_gym.load('alf.environments.point_mass_env:PointMass-v0')``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

_MODULE = "alf.environments.point_mass_env"


class PointMassEnv(gym.Env):
    """A point mass moved by bounded velocities from the origin, with no reward.

    Args:
        max_step: the largest displacement per step along each axis.
    """

    metadata = {"render_modes": [], "render_fps": 20}

    def __init__(self, max_step: float = 0.1, render_mode=None):
        if max_step <= 0:
            raise ValueError(f"PointMassEnv.max_step must be > 0, got {max_step}")
        self._max_step = float(max_step)
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.render_mode = render_mode
        self._position = np.zeros(2, np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._position = np.zeros(2, np.float32)
        return self._position.copy(), {}

    def step(self, action):
        action = np.clip(np.asarray(action, np.float32).reshape(2), -1.0, 1.0)
        self._position = np.clip(self._position + self._max_step * action, -1.0, 1.0)
        return self._position.copy(), 0.0, False, False, {}


if "PointMass-v0" not in gym.envs.registry:
    gym.register(id="PointMass-v0", entry_point=f"{_MODULE}:PointMassEnv", max_episode_steps=30)
