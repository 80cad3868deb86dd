"""Episode metrics computed from batched ``TimeStep``s: returns, lengths, counts.

The metrics always see the raw (untransformed) time steps, so rewards are the
environment's own. An episode's return is the sum of rewards from its first MID
step to its LAST step (the reward at FIRST is 0 by definition) and its length is
the number of actions taken (MID and LAST steps). Averages are over the last
``buffer_size`` finished episodes (of any env).
"""

from __future__ import annotations

import collections

import numpy as np
import torch

from alf.data_structures import StepType, TimeStep


class EpisodeMetrics:
    """Tracks ``EnvironmentSteps``, ``NumberOfEpisodes``, ``AverageReturn``,
    ``AverageEpisodeLength`` for a batch of environments.

    Args:
        batch_size: number of environments in the batch.
        buffer_size: number of most recent episodes averaged (at least
            ``batch_size``).
        reward_dim: size of a vector reward (the return averaged is the first
            component's sum when > 1: AverageReturn is per component).
    """

    def __init__(self, batch_size: int, buffer_size: int = 10, reward_dim: int = 0):
        self._batch_size = batch_size
        shape = (batch_size,) if reward_dim == 0 else (batch_size, reward_dim)
        self._returns = np.zeros(shape, np.float64)
        self._lengths = np.zeros(batch_size, np.int64)
        size = max(buffer_size, batch_size)
        self._episode_returns = collections.deque(maxlen=size)
        self._episode_lengths = collections.deque(maxlen=size)
        self.env_steps = 0
        self.num_episodes = 0

    def __call__(self, time_step: TimeStep) -> None:
        """Record one batched time step ``[B, ...]`` (torch or numpy)."""
        step_type = _as_numpy(time_step.step_type)
        counts = np.bincount(step_type, minlength=3)
        num_first, num_last = counts[StepType.FIRST], counts[StepType.LAST]
        # Add to every row, then restart the rows at FIRST: the same sums as adding
        # to the other rows only, with fewer numpy calls (this runs every step).
        self._returns += _as_numpy(time_step.reward)
        self._lengths += 1
        if num_first:
            first = step_type == StepType.FIRST
            self._returns[first] = 0.0
            self._lengths[first] = 0
        self.env_steps += self._batch_size - int(num_first)
        if num_last:
            for i in np.flatnonzero(step_type == StepType.LAST):
                self._episode_returns.append(self._returns[i].copy())
                self._episode_lengths.append(int(self._lengths[i]))
            self.num_episodes += int(num_last)

    @property
    def average_return(self):
        """Mean return of the buffered episodes (0 before any episode ends)."""
        if not self._episode_returns:
            return 0.0
        return np.mean(np.stack(self._episode_returns), axis=0)

    @property
    def average_episode_length(self) -> float:
        if not self._episode_lengths:
            return 0.0
        return float(np.mean(self._episode_lengths))

    @property
    def has_episodes(self) -> bool:
        return bool(self._episode_returns)

    def results(self) -> dict:
        """``{metric name: value}`` with ALF's metric names."""
        return {
            "EnvironmentSteps": self.env_steps,
            "NumberOfEpisodes": self.num_episodes,
            "AverageReturn": self.average_return,
            "AverageEpisodeLength": self.average_episode_length,
        }

    def state_dict(self) -> dict:
        """Counters and buffered episodes (for checkpoints); JSON/tensor friendly."""
        return {
            "env_steps": self.env_steps,
            "num_episodes": self.num_episodes,
            "episode_returns": torch.as_tensor(np.array(list(self._episode_returns))),
            "episode_lengths": torch.as_tensor(np.array(list(self._episode_lengths), np.int64)),
        }

    def load_state_dict(self, state: dict) -> None:
        self.env_steps = int(state["env_steps"])
        self.num_episodes = int(state["num_episodes"])
        self._episode_returns.clear()
        self._episode_returns.extend(list(state["episode_returns"].numpy()))
        self._episode_lengths.clear()
        self._episode_lengths.extend(int(x) for x in state["episode_lengths"])


def _as_numpy(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        if x.requires_grad or not x.is_cpu:
            x = x.detach().cpu()
        return x.numpy()
    return np.asarray(x)
