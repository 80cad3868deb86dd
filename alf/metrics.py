r"""Episode metrics computed from batched ``TimeStep``s: returns, lengths, counts.

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

``AverageDiscountedReturn`` is ALF's metric of that name (``AverageDiscountedReturnMetric``,
whose ``discount`` is configurable): per episode, the mean over its steps of the discounted
return from each step on, :math:`\frac{1}{L}\sum_{l=1}^{L}\sum_{k=0}^{l-1}\gamma^k r_l`
(:math:`r_l` the reward of the :math:`l`-th action, :math:`L` the length; the
``TimeStep.discount`` of each step multiplies in too, so a lost Atari life cuts it).
"""

from __future__ import annotations

import collections

import numpy as np
import torch

import alf
import alf.nest as nest
from alf.data_structures import StepType, TimeStep


@alf.configurable
class AverageDiscountedReturnMetric:
    r"""ALF's discounted-return metric (module doc), kept per env of a batch.

    Args:
        batch_size: number of environments.
        reward_shape: ``()`` or ``(d,)`` for a vector reward.
        discount: :math:`\gamma`.
    """

    def __init__(self, batch_size: int, reward_shape: tuple = (), discount: float = 0.99):
        self._discount = discount
        self._weight = np.zeros(batch_size, np.float64)  # sum of gamma^k reaching this step
        self._step_discount = np.zeros(batch_size, np.float64)
        self._sum = np.zeros((batch_size, *reward_shape), np.float64)

    def __call__(self, reward, discount, first) -> None:
        """Add one batched step: ``reward`` ``[B, ...]``, ``discount`` ``[B]`` (or 1.0),
        ``first`` its FIRST rows (None when there are none)."""
        self._weight *= self._discount * self._step_discount
        self._weight += 1.0
        # a copy: a batched env may hand out the same (shared-memory) buffer every step
        self._step_discount = np.array(discount, np.float64)
        if first is not None:
            self._weight[first] = 0.0
            self._sum[first] = 0.0
        weight = self._weight if self._sum.ndim == 1 else self._weight[:, None]
        self._sum += reward * weight

    def value(self, row: int, length: int) -> np.ndarray:
        """The metric of row ``row``'s episode ending now, ``length`` steps long."""
        return self._sum[row] / max(length, 1)


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
        self._discounted = AverageDiscountedReturnMetric(batch_size, shape[1:])
        self._episode_discounted = collections.deque(maxlen=size)
        self.env_steps = 0
        self.num_episodes = 0

    def __call__(self, time_step: TimeStep) -> None:
        """Record one batched time step ``[B, ...]`` (torch or numpy)."""
        step_type = _as_numpy(time_step.step_type)
        counts = np.bincount(step_type, minlength=3)
        num_first, num_last = counts[StepType.FIRST], counts[StepType.LAST]
        # Add to every row, then restart the rows at FIRST: the same sums as adding
        # to the other rows only, with fewer numpy calls (this runs every step).
        reward = _as_numpy(time_step.reward)
        self._returns += reward
        self._lengths += 1
        first = None
        if num_first:
            first = step_type == StepType.FIRST
            self._returns[first] = 0.0
            self._lengths[first] = 0
        discount = time_step.discount
        discount = 1.0 if isinstance(discount, tuple) else _as_numpy(discount)  # () if unset
        self._discounted(reward, discount, first)
        self.env_steps += self._batch_size - int(num_first)
        if num_last:
            last = np.flatnonzero(step_type == StepType.LAST)
            for i in last:
                self._episode_returns.append(self._returns[i].copy())
                self._episode_lengths.append(int(self._lengths[i]))
                self._episode_discounted.append(self._discounted.value(i, self._lengths[i]))
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
    def average_discounted_return(self):
        """Mean ``AverageDiscountedReturn`` of the buffered episodes (module doc)."""
        if not self._episode_discounted:
            return 0.0
        return np.mean(np.stack(self._episode_discounted), axis=0)

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
            "AverageDiscountedReturn": self.average_discounted_return,
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
            "episode_discounted_returns": torch.as_tensor(np.array(list(self._episode_discounted))),
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
        self._episode_discounted.clear()
        if "episode_discounted_returns" in state:  # not in checkpoints of older versions
            self._episode_discounted.extend(list(state["episode_discounted_returns"].numpy()))
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
