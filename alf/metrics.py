"""Episode metrics computed from batched ``TimeStep``s: returns, lengths, counts.

The metrics always see the raw (untransformed) time steps, so rewards are the
environment's own. An episode's return is the sum of rewards from its first MID
step to its LAST step (the reward at FIRST is 0 by definition) and its length is
the number of actions taken (MID and LAST steps). Averages are over the last
``buffer_size`` finished episodes (of any env).

``AverageEnvInfo/<field>`` averages, over the same episodes, the value every
per-env numeric field of ``TimeStep.env_info`` has at the episode's LAST step
(e.g. ``is_success`` of goal-reaching envs: a success rate; HalfCheetah's final
``x_position``), as Stable-Baselines3's ``Monitor(info_keywords=...)`` records
them at the end of an episode. ``<field>`` is the dotted path in ``env_info``.
"""

from __future__ import annotations

import collections

import numpy as np
import torch

import alf.nest as nest
from alf.data_structures import StepType, TimeStep


class EpisodeMetrics:
    """Tracks ``EnvironmentSteps``, ``NumberOfEpisodes``, ``AverageReturn``,
    ``AverageEpisodeLength`` and ``AverageEnvInfo/<field>`` (module doc) for a batch
    of environments.

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
        self._size = size
        #: {env_info field path: deque of its values at LAST}
        self._episode_env_info: dict[str, collections.deque] = {}
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
            last = np.flatnonzero(step_type == StepType.LAST)
            for i in last:
                self._episode_returns.append(self._returns[i].copy())
                self._episode_lengths.append(int(self._lengths[i]))
            self.num_episodes += int(num_last)
            self._record_env_info(time_step.env_info, last)

    def _record_env_info(self, env_info, last: np.ndarray) -> None:
        """Append the ``last`` rows of every per-env numeric ``env_info`` leaf ``[B]``."""
        if not nest.is_nested(env_info):
            return
        for path, leaf in nest.flatten_with_path(env_info):
            values = _as_numpy(leaf)
            if values.shape != (self._batch_size,) or values.dtype.kind not in "biuf":
                continue
            episodes = self._episode_env_info.get(path)
            if episodes is None:
                episodes = self._episode_env_info[path] = collections.deque(maxlen=self._size)
            episodes.extend(values[last].astype(np.float64).tolist())

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

    def average_env_info(self) -> dict[str, float]:
        """``{field path: mean value at LAST}`` over the buffered episodes."""
        return {path: float(np.mean(values)) for path, values in self._episode_env_info.items()}

    def results(self) -> dict:
        """``{metric name: value}`` with ALF's metric names."""
        results = {
            "EnvironmentSteps": self.env_steps,
            "NumberOfEpisodes": self.num_episodes,
            "AverageReturn": self.average_return,
            "AverageEpisodeLength": self.average_episode_length,
        }
        for path, value in self.average_env_info().items():
            results[f"AverageEnvInfo/{path}"] = value
        return results

    def state_dict(self) -> dict:
        """Counters and buffered episodes (for checkpoints); JSON/tensor friendly."""
        return {
            "env_steps": self.env_steps,
            "num_episodes": self.num_episodes,
            "episode_returns": torch.as_tensor(np.array(list(self._episode_returns))),
            "episode_lengths": torch.as_tensor(np.array(list(self._episode_lengths), np.int64)),
            "episode_env_info": {
                path: torch.tensor(list(values), dtype=torch.float64)
                for path, values in self._episode_env_info.items()
            },
        }

    def load_state_dict(self, state: dict) -> None:
        self.env_steps = int(state["env_steps"])
        self.num_episodes = int(state["num_episodes"])
        self._episode_returns.clear()
        self._episode_returns.extend(list(state["episode_returns"].numpy()))
        self._episode_lengths.clear()
        self._episode_lengths.extend(int(x) for x in state["episode_lengths"])
        self._episode_env_info = {
            path: collections.deque(values.tolist(), maxlen=self._size)
            for path, values in state.get("episode_env_info", {}).items()
        }


def _as_numpy(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        if x.requires_grad or not x.is_cpu:
            x = x.detach().cpu()
        return x.numpy()
    return np.asarray(x)
