"""``ReplayBuffer``: per-environment ring storage of experience nests.

Storage is ``[num_envs, max_length, ...]`` torch tensors on the CPU for every
leaf of the experience nest. Each env has a position counter that only grows
(the total number of steps it has added); the newest ``max_length`` steps are
kept (FIFO overwrite). Sampled sequences never cross environments.
"""

from __future__ import annotations

import torch

import alf.nest as nest
from alf.data_structures import BatchInfo


class ReplayBuffer:
    """Ring buffer of experience, one ring per environment.

    Args:
        data_spec: nest of ``TensorSpec`` of one step (no batch dim).
        num_environments: number of environments (rows).
        max_length: steps kept per environment.
        device: where the storage lives (CPU by default).
        name: for messages.
    """

    def __init__(
        self,
        data_spec,
        num_environments: int,
        max_length: int,
        device="cpu",
        name: str = "ReplayBuffer",
    ):
        self._data_spec = data_spec
        self._num_envs = num_environments
        self._max_length = max_length
        self._device = torch.device(device)
        self._name = name
        self._buffer = nest.map_structure(
            lambda spec: torch.zeros(
                (num_environments, max_length) + tuple(spec.shape),
                dtype=spec.dtype,
                device=self._device,
            ),
            data_spec,
        )
        self._flat_buffer = nest.flatten(self._buffer)
        self._current_pos = torch.zeros(num_environments, dtype=torch.int64)
        self._env_range = torch.arange(num_environments)

    @property
    def num_environments(self) -> int:
        return self._num_envs

    @property
    def max_length(self) -> int:
        return self._max_length

    @property
    def current_pos(self) -> torch.Tensor:
        """``[num_envs]`` total steps added per env (only grows)."""
        return self._current_pos

    def current_size(self) -> torch.Tensor:
        """``[num_envs]`` steps currently stored per env."""
        return self._current_pos.clamp(max=self._max_length)

    def bytes_per_transition(self) -> int:
        """Memory of one stored step of one env, in bytes."""
        return sum(x[0, 0].numel() * x.element_size() for x in self._flat_buffer)

    def total_bytes(self) -> int:
        return self.bytes_per_transition() * self._num_envs * self._max_length

    def add_batch(self, batch, env_ids: torch.Tensor | None = None) -> None:
        """Append one step ``[B, ...]`` for the envs ``env_ids`` (all envs when None)."""
        if env_ids is None:
            env_ids = self._env_range
        env_ids = env_ids.to(torch.int64)
        index = self._current_pos[env_ids] % self._max_length
        for storage, value in zip(self._flat_buffer, nest.flatten(batch)):
            storage[env_ids, index] = value.to(storage.device, storage.dtype)
        self._current_pos[env_ids] += 1

    def _check_uniform_size(self) -> int:
        sizes = self.current_size()
        size = int(sizes[0])
        if not bool((sizes == size).all()):
            raise RuntimeError(
                f"{self._name}: gather_all needs the same number of steps for every env, "
                f"got {sizes.tolist()}"
            )
        return size

    def gather_all(self):
        """All stored steps, oldest first: ``[num_envs, size, ...]`` (batch-major)."""
        size = self._check_uniform_size()
        pos = int(self._current_pos[0])
        indices = torch.arange(pos - size, pos) % self._max_length
        return nest.map_structure(lambda x: x[:, indices], self._buffer)

    def get_batch(self, batch_size: int, batch_length: int, generator=None):
        """Uniformly sample ``batch_size`` sequences of ``batch_length`` steps.

        Returns:
            ``(batch, BatchInfo)`` with the batch ``[batch_size, batch_length, ...]``
            (batch-major) and ``BatchInfo(env_ids, positions)`` of each sequence's
            first step. Sequences never cross environments.
        """
        sizes = self.current_size()
        num_starts = (sizes - batch_length + 1).clamp(min=0)
        total = int(num_starts.sum())
        if total == 0:
            raise RuntimeError(
                f"{self._name}: no env has {batch_length} steps stored yet (sizes {sizes.tolist()})"
            )
        flat = torch.randint(0, total, (batch_size,), generator=generator)
        cumulative = torch.cumsum(num_starts, 0)
        env_ids = torch.searchsorted(cumulative, flat, right=True)
        offsets = flat - (cumulative[env_ids] - num_starts[env_ids])
        first_pos = self._current_pos[env_ids] - sizes[env_ids] + offsets
        positions = first_pos.unsqueeze(1) + torch.arange(batch_length)
        index = positions % self._max_length
        rows = env_ids.unsqueeze(1)
        batch = nest.map_structure(lambda x: x[rows, index], self._buffer)
        return batch, BatchInfo(env_ids=env_ids, positions=first_pos)

    def clear(self, keep_last: int = 0) -> None:
        """Forget stored steps (positions keep growing)."""
        if keep_last:
            raise NotImplementedError("keep_last is not supported yet")
        self._current_pos.zero_()

    def state_dict(self) -> dict:
        """Contents and pointers, for checkpoints."""
        state = {f"data.{i}": x for i, x in enumerate(self._flat_buffer)}
        state["current_pos"] = self._current_pos.clone()
        return state

    def load_state_dict(self, state: dict) -> None:
        for i, storage in enumerate(self._flat_buffer):
            storage.copy_(state[f"data.{i}"])
        self._current_pos.copy_(state["current_pos"])
