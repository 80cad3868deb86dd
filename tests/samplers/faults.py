"""An env that kills the process it runs in, for the remote-sampler failure tests."""

from __future__ import annotations

import functools
import os

import gymnasium as gym

from alf.environments import suite_gym


class DieOnceAt(gym.Wrapper):
    """Kills its process (``SIGKILL``) on its ``at``-th step (counted over the process's
    life); with ``marker``, only if that file does not exist yet (it is created first)."""

    def __init__(self, env, at: int, marker: str | None):
        super().__init__(env)
        self._at, self._marker, self._steps = at, marker, 0

    def step(self, action):
        self._steps += 1
        if self._steps == self._at and not (self._marker and os.path.exists(self._marker)):
            if self._marker:
                with open(self._marker, "w") as f:
                    f.write(str(os.getpid()))
            os.kill(os.getpid(), 9)
        return self.env.step(action)


def load_dying_env(env_name, env_id=None, die_env_id=1, at=0, marker=None):
    """``suite_gym.load``; env ``die_env_id`` dies on its ``at``-th step (0: never)."""
    if env_id != die_env_id or not at:
        return suite_gym.load(env_name, env_id=env_id)
    wrapper = functools.partial(DieOnceAt, at=at, marker=marker)
    return suite_gym.load(env_name, env_id=env_id, gym_env_wrappers=(wrapper,))
