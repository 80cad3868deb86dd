r"""``MaskedChoice-v0``: a toy env whose legal actions change every step.

Each step, ``num_legal`` of the ``num_actions`` actions are legal, drawn from the env's
seeded ``np_random``; the observation is a dict (alf's action-mask convention,
``alf/utils/action_mask.py``):

- ``observation``: ``[num_actions]`` float32, a fresh random permutation of the ranks
  :math:`0, \frac{1}{n-1}, \dots, 1` (one per action, legal or not);
- ``action_mask``: ``[num_actions]`` int8, 1 for a legal action.

The legal action of the highest rank pays +1, the other legal actions 0; an illegal
action ends the episode (terminated) with reward ``illegal_reward`` (-10). Episodes last
``episode_length`` steps (a time limit: truncated). The optimal return is therefore
``episode_length`` (10), and needs the mask: the best action overall is illegal half of
the time (``1 - num_legal / num_actions``), so a policy that ignores the mask loses there,
and a policy that reads only the ranks, masked, is optimal. Uniformly random legal
actions earn ``episode_length / num_legal`` on average (5).

Registering the id happens on import (``suite_gym.load("alf.environments.masked_choice:
MaskedChoice-v0")`` imports this module, also in a subprocess worker); keyword arguments
go to the constructor.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class MaskedChoice(gym.Env):
    """See the module docstring.

    Args:
        num_actions: number of actions :math:`n` (>= 2).
        num_legal: legal actions per step (``1..num_actions``).
        episode_length: steps per episode (the time limit).
        illegal_reward: reward of an illegal action (which ends the episode).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        num_actions: int = 4,
        num_legal: int = 2,
        episode_length: int = 10,
        illegal_reward: float = -10.0,
    ):
        if num_actions < 2 or not 1 <= num_legal <= num_actions:
            raise ValueError(
                f"MaskedChoice: need num_actions >= 2 and 1 <= num_legal <= num_actions, got "
                f"num_actions={num_actions}, num_legal={num_legal}"
            )
        if episode_length < 1:
            raise ValueError(f"MaskedChoice: episode_length must be >= 1, got {episode_length}")
        self._n, self._num_legal = num_actions, num_legal
        self._episode_length = episode_length
        self._illegal_reward = float(illegal_reward)
        self.observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, 1.0, (num_actions,), np.float32),
                "action_mask": spaces.Box(0, 1, (num_actions,), np.int8),
            }
        )
        self.action_space = spaces.Discrete(num_actions)
        self._t = 0
        self._ranks = np.zeros(num_actions, np.float32)
        self._mask = np.ones(num_actions, np.int8)

    @property
    def best_action(self) -> int:
        """The legal action of the highest rank (the one that pays)."""
        return int(np.argmax(np.where(self._mask == 1, self._ranks, -1.0)))

    def _draw(self) -> dict:
        self._ranks = self.np_random.permutation(self._n).astype(np.float32) / (self._n - 1)
        legal = self.np_random.choice(self._n, self._num_legal, replace=False)
        self._mask = np.zeros(self._n, np.int8)
        self._mask[legal] = 1
        return {"observation": self._ranks.copy(), "action_mask": self._mask.copy()}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._draw(), {"illegal": 0.0}

    def step(self, action):
        action = int(action)
        if not 0 <= action < self._n or self._mask[action] == 0:
            return self._draw(), self._illegal_reward, True, False, {"illegal": 1.0}
        reward = 1.0 if action == self.best_action else 0.0
        self._t += 1
        return self._draw(), reward, False, self._t >= self._episode_length, {"illegal": 0.0}


if "MaskedChoice-v0" not in gym.envs.registry:
    gym.register(id="MaskedChoice-v0", entry_point="alf.environments.masked_choice:MaskedChoice")
