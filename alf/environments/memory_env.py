"""``RepeatFirstObservation-v0``: a memory task that a feed-forward policy cannot solve.

At reset the env draws a cue ``c`` in ``{0, ..., num_cues - 1}`` and shows it, one-hot,
in the first observation only; later observations show zeros in the cue slots. Every
observation also holds the fraction of the episode elapsed, so a policy knows when it
must answer. The episode lasts ``delay + 1`` actions: the last action is rewarded
``+1`` if it equals ``c`` and ``-1`` otherwise; all earlier rewards are 0, and the
episode then terminates.

A recurrent policy can carry ``c`` to the end: return 1. A feed-forward policy sees
no cue when it answers, so no policy does better than guessing: expected return
``2 / num_cues - 1`` (0 for two cues). Loadable as
``'alf.environments.memory_env:RepeatFirstObservation-v0'`` (module import registers
the id) or by ``suite_gym.load`` with that id.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class RepeatFirstObservation(gym.Env):
    """Repeat, after ``delay`` steps, the cue shown at the first step (see the module doc).

    Args:
        num_cues: number of possible cues (and actions).
        delay: number of actions between the cue and the answer (>= 1).
    """

    metadata = {"render_modes": []}

    def __init__(self, num_cues: int = 2, delay: int = 4):
        if num_cues < 2:
            raise ValueError(f"RepeatFirstObservation: num_cues must be >= 2, got {num_cues}")
        if delay < 1:
            raise ValueError(f"RepeatFirstObservation: delay must be >= 1, got {delay}")
        self._num_cues = num_cues
        self._delay = delay
        self.observation_space = spaces.Box(0.0, 1.0, (num_cues + 1,), np.float32)
        self.action_space = spaces.Discrete(num_cues)
        self._cue = 0
        self._steps = 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self._num_cues + 1, np.float32)
        if self._steps == 0:
            obs[self._cue] = 1.0
        obs[-1] = self._steps / self._delay
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._cue = int(self.np_random.integers(self._num_cues))
        self._steps = 0
        return self._obs(), {}

    def step(self, action):
        answer = self._steps == self._delay
        self._steps += 1
        reward = 0.0
        if answer:
            reward = 1.0 if int(action) == self._cue else -1.0
        return self._obs(), reward, answer, False, {}


if "RepeatFirstObservation-v0" not in gym.envs.registry:
    gym.register(
        id="RepeatFirstObservation-v0",
        entry_point="alf.environments.memory_env:RepeatFirstObservation",
    )
