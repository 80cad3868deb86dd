"""``DeepSea-v0``: the deep-sea exploration task of Osband et al. (bsuite's ``deep_sea``).

"Deep Exploration via Randomized Value Functions" (Osband, Van Roy, Russo, Wen, 2019) and
"Behaviour Suite for Reinforcement Learning" (Osband et al., 2020). An ``N x N`` grid: the
agent starts at the top-left cell (row 0, column 0); each step it descends one row and
moves one column left or right (clipped at the walls), so every episode lasts exactly
``N`` steps and terminates below the bottom row (a LAST with discount 0).

Rewards: every "right" move costs ``move_cost / N`` (0.01 / N by default); a "right" move
from the rightmost column pays +1 (the treasure). Starting at column 0 and moving at most one
column a step, the agent reaches column ``N - 1`` no earlier than row ``N - 1``, so the
treasure needs all ``N`` moves to be "right": return ``1 - N * move_cost / N = 1 -
move_cost`` (0.99). Every other episode returns ``-k * move_cost / N <= 0`` for its ``k``
right moves, and the best of those is to always go left (return 0): a myopic learner
stops going right, and a uniformly random policy finds the treasure with probability
``2 ** -N``.

Actions: ``Discrete(2)``. With ``randomize_actions=True`` (default) which action means
"right" is drawn per cell, once, from ``mapping_seed``: ``mapping[row, column]`` in {0, 1}
is the "right" action at that cell (``action_mapping``), so neither "always 0" nor "always
1" finds the treasure. The mapping is part of the task, not of an episode: every env made
with the same ``mapping_seed`` (all envs of a ``create_environment`` run, whatever their
reset seeds) has the same mapping. ``randomize_actions=False``: action 1 is always right.

Observation: the one-hot of the agent's cell, ``[N * N]`` float32 (row-major: index ``row * N
+ column``), all zeros after the last step (the agent has left the grid).
``info['success']`` is 1.0 at the step that takes the treasure, else 0.0 (alf's
``env_info['success']``, averaged over episodes at their LAST by the evaluation metrics).

Loadable as ``suite_gym.load('alf.environments.deep_sea:DeepSea-v0', size=20)`` (importing the
module registers the id, also in a subprocess worker); the keyword arguments go to the
constructor.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


def action_mapping(size: int, mapping_seed: int | None, randomize_actions: bool) -> np.ndarray:
    """The ``[size, size]`` int64 table of the "right" action at each ``(row, column)``.

    Args:
        size: the grid's ``N``.
        mapping_seed: seed of the draw (``numpy.random.default_rng``); None: unseeded.
        randomize_actions: draw each cell's "right" action uniformly from {0, 1}; False:
            all ones.
    """
    if not randomize_actions:
        return np.ones((size, size), np.int64)
    return np.random.default_rng(mapping_seed).integers(0, 2, size=(size, size), dtype=np.int64)


class DeepSea(gym.Env):
    """The deep-sea chain (see the module doc).

    Args:
        size: the grid's ``N`` (rows, columns and episode length), >= 2.
        mapping_seed: seed of the per-cell action mapping (fixed per task; 0 by default so
            every env of a run shares one mapping; None draws a fresh one).
        randomize_actions: randomize which action is "right" per cell (True, bsuite's
            default); False: action 1 is always "right".
        move_cost: ``move_cost / N`` is the cost of each "right" move (bsuite's
            ``unscaled_move_cost``, 0.01).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        size: int = 10,
        mapping_seed: int | None = 0,
        randomize_actions: bool = True,
        move_cost: float = 0.01,
    ):
        if int(size) < 2:
            raise ValueError(f"DeepSea: size must be >= 2, got {size}")
        if move_cost < 0:
            raise ValueError(f"DeepSea: move_cost must be >= 0, got {move_cost}")
        self._size = int(size)
        self._move_cost = float(move_cost) / self._size
        self._mapping = action_mapping(self._size, mapping_seed, bool(randomize_actions))
        self.observation_space = spaces.Box(0.0, 1.0, (self._size * self._size,), np.float32)
        self.action_space = spaces.Discrete(2)
        self._row = 0
        self._column = 0

    @property
    def size(self) -> int:
        """The grid's ``N``."""
        return self._size

    @property
    def action_mapping(self) -> np.ndarray:
        """A copy of the ``[N, N]`` table of the "right" action at each ``(row, column)``."""
        return self._mapping.copy()

    @property
    def position(self) -> tuple[int, int]:
        """The agent's ``(row, column)``; row ``N`` after the last step."""
        return self._row, self._column

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self._size * self._size, np.float32)
        if self._row < self._size:
            obs[self._row * self._size + self._column] = 1.0
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._row, self._column = 0, 0
        return self._obs(), {"success": 0.0}

    def step(self, action):
        if self._row >= self._size:
            raise RuntimeError("DeepSea: step() after the episode ended; call reset()")
        action = int(action)
        if action not in (0, 1):
            raise ValueError(f"DeepSea: action must be 0 or 1, got {action}")
        right = action == self._mapping[self._row, self._column]
        reward, success = 0.0, 0.0
        if right:
            reward -= self._move_cost
            if self._column == self._size - 1:
                reward += 1.0
                success = 1.0
            self._column = min(self._column + 1, self._size - 1)
        else:
            self._column = max(self._column - 1, 0)
        self._row += 1
        terminated = self._row == self._size
        return self._obs(), reward, terminated, False, {"success": success}


if "DeepSea-v0" not in gym.envs.registry:
    gym.register(id="DeepSea-v0", entry_point="alf.environments.deep_sea:DeepSea")
