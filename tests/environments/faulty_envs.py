"""Gymnasium wrappers that inject faults into an env, for tests of alf's reliability."""

import os
import time

import gymnasium as gym
import numpy as np


class NonFiniteAt(gym.Wrapper):
    """Returns a NaN reward or an inf observation (``field``) on the ``at``-th step of the
    wrapped env's lifetime (steps counted across resets), and normal ones otherwise."""

    def __init__(self, env, at: int, field: str = "reward"):
        super().__init__(env)
        if field not in ("reward", "observation"):
            raise ValueError(f"field must be 'reward' or 'observation', got {field!r}")
        self._at, self._field, self._steps = at, field, 0

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        if self._steps == self._at:
            if self._field == "reward":
                reward = float("nan")
            else:
                observation = np.full_like(observation, np.inf)
        return observation, reward, terminated, truncated, info


class HangAt(gym.Wrapper):
    """Hangs (sleeps for an hour) in its ``at``-th step, counted across resets."""

    def __init__(self, env, at: int):
        super().__init__(env)
        self._at, self._steps = at, 0

    def step(self, action):
        self._steps += 1
        if self._steps >= self._at:
            time.sleep(3600)
        return self.env.step(action)


class DieAt(gym.Wrapper):
    """Kills its own process (exit code 3) in every step from its ``at``-th on, counted
    over the life of the process: a restarted worker dies again on its ``at``-th step."""

    def __init__(self, env, at: int):
        super().__init__(env)
        self._at, self._steps = at, 0

    def step(self, action):
        self._steps += 1
        if self._steps >= self._at:
            os._exit(3)
        return self.env.step(action)
