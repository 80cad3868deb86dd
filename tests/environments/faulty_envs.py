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
    """Hangs in its ``at``-th step (counted across resets): sleeps for an hour, or with
    ``spin`` runs a Python loop that never ends (no system call a signal could interrupt).

    Args:
        marker: a file created when the hang begins (a test waits for it).
        only_in_pid: hang only in the process with this pid (e.g. the trainer's own, where
            the evaluation env runs, and not in its env workers).
    """

    def __init__(self, env, at: int, spin: bool = False, marker=None, only_in_pid=None):
        super().__init__(env)
        self._at, self._steps = at, 0
        self._spin, self._marker, self._only_in_pid = spin, marker, only_in_pid

    def step(self, action):
        self._steps += 1
        if self._steps >= self._at and self._only_in_pid in (None, os.getpid()):
            if self._marker is not None:
                with open(self._marker, "w") as f:
                    f.write(str(os.getpid()))
            if self._spin:
                while True:
                    pass
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


class SlowStart(gym.Wrapper):
    """Takes ``seconds`` to construct (in the process with pid ``only_in_pid``, if given),
    creating ``marker`` first: a start-up a test can interrupt."""

    def __init__(self, env, seconds: float, marker=None, only_in_pid=None):
        super().__init__(env)
        if only_in_pid in (None, os.getpid()):
            if marker is not None:
                with open(marker, "w") as f:
                    f.write(str(os.getpid()))
            time.sleep(seconds)
