"""``RingPositions``: where each environment's steps are in a per-environment ring.

A ring of ``num_envs`` rows of ``max_length`` slots. Each env has a position counter
that only grows (the total number of steps it has added, never reset, not even by
``forget``); step ``p`` of env ``e`` lives in slot ``p % max_length`` of row ``e``,
flat slot ``e * max_length + p % max_length``, and the newest ``max_length`` steps are
kept (FIFO overwrite). Steps before an env's clear position are forgotten. This module
knows positions and slots; ``ReplayBuffer`` holds the data (``steps_to_last`` is given
the step types it scans).
"""

from __future__ import annotations

import torch

from alf.data_structures import StepType


class RingPositions:
    """Per-env position counters of a ``[num_envs, max_length]`` ring and its slot layout.

    Args:
        num_envs: number of environments (rows).
        max_length: slots per environment.
        name: for messages.
    """

    def __init__(self, num_envs: int, max_length: int, name: str):
        self.num_envs = num_envs
        self.max_length = max_length
        self.name = name
        self.current_pos = torch.zeros(num_envs, dtype=torch.int64)
        self.clear_pos = torch.zeros(num_envs, dtype=torch.int64)
        self.env_range = torch.arange(num_envs)

    def env_ids(self, env_ids: torch.Tensor | None) -> torch.Tensor:
        """``env_ids`` as int64 on the CPU (every env when None)."""
        if env_ids is None:
            env_ids = self.env_range
        return env_ids.to(device="cpu", dtype=torch.int64)

    def slots(self, env_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Flat slot index ``env_id * max_length + position % max_length``."""
        return env_ids * self.max_length + positions % self.max_length

    def current_size(self) -> torch.Tensor:
        """``[num_envs]`` steps currently stored per env."""
        return (self.current_pos - self.clear_pos).clamp(max=self.max_length)

    def first_pos(self) -> torch.Tensor:
        """``[num_envs]`` position of the oldest stored step per env."""
        return self.current_pos - self.current_size()

    def oldest_readable_pos(self) -> torch.Tensor:
        """``[num_envs]`` oldest position still in the ring (forgotten or not), per env."""
        return (self.current_pos - self.max_length).clamp(min=0)

    def forget(self, keep_last: int) -> None:
        """Forget stored steps except each env's newest ``keep_last``."""
        self.clear_pos = torch.maximum(self.clear_pos, self.current_pos - keep_last)

    def start_of(self, env_ids: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """The position held by slot ``slots`` (``0..max_length-1``) of envs ``env_ids``:
        the newest position ``<= current_pos - 1`` that maps to it."""
        last = self.current_pos[env_ids] - 1
        return last - (last - slots) % self.max_length

    def valid_slots(self) -> torch.Tensor:
        """``[num_envs * max_length]`` bool: which flat slots hold a stored step."""
        slots = torch.arange(self.max_length)
        last = self.current_pos.unsqueeze(1) - 1
        positions = last - (last - slots) % self.max_length
        return (positions >= self.first_pos().unsqueeze(1)).reshape(-1)

    def newest_slots(self, count: int) -> torch.Tensor:
        """Flat slots of each env's newest ``count`` stored steps (fewer where fewer
        are stored)."""
        back = torch.arange(count)
        positions = self.current_pos.unsqueeze(1) - 1 - back
        stored = back < self.current_size().unsqueeze(1)
        envs = self.env_range.unsqueeze(1).expand_as(positions)
        return self.slots(envs[stored], positions[stored])

    def no_starts_error(self, batch_length: int) -> RuntimeError:
        return RuntimeError(
            f"{self.name}: no env has {batch_length} steps stored yet "
            f"(sizes {self.current_size().tolist()})"
        )

    def sample_uniform(self, batch_size: int, batch_length: int, generator):
        """``(env_ids, first_pos)`` ``[B]`` uniform over the valid starts of all envs
        (steps with ``batch_length - 1`` successors stored in the same env)."""
        sizes = self.current_size()
        num_starts = (sizes - batch_length + 1).clamp(min=0)
        total = int(num_starts.sum())
        if total == 0:
            raise self.no_starts_error(batch_length)
        flat = torch.randint(0, total, (batch_size,), generator=generator)
        cumulative = torch.cumsum(num_starts, 0)
        env_ids = torch.searchsorted(cumulative, flat, right=True)
        offsets = flat - (cumulative[env_ids] - num_starts[env_ids])
        return env_ids, self.first_pos()[env_ids] + offsets

    def check_readable(self, env_ids: torch.Tensor, positions: torch.Tensor) -> None:
        """Raise ``ValueError`` naming the first of ``positions`` of envs ``env_ids`` (same
        shape, int64) that is no longer (or not yet) in the ring."""
        readable = (positions >= self.oldest_readable_pos()[env_ids]) & (
            positions < self.current_pos[env_ids]
        )
        if not bool(readable.all()):
            bad = (~readable).nonzero()[0].tolist()
            raise ValueError(
                f"{self.name}: position {int(positions[tuple(bad)])} of env "
                f"{int(env_ids[tuple(bad)])} is not in the storage (readable: "
                f"{self.oldest_readable_pos().tolist()} .. {(self.current_pos - 1).tolist()})"
            )

    def steps_to_last(
        self, step_types: torch.Tensor, env_ids: torch.Tensor, positions: torch.Tensor, chunk: int
    ) -> torch.Tensor:
        """``[B]`` steps from ``positions`` ``[B]`` of envs ``env_ids`` ``[B]`` (int64) to the
        first LAST step at or after them in ``step_types`` ``[num_envs, max_length]``, or
        to the env's newest step when there is none; scans ``chunk`` steps at a time."""
        newest = self.current_pos[env_ids] - 1
        end = newest.clone()
        todo = torch.arange(len(positions))
        offset = 0
        while len(todo) and offset < self.max_length:
            pos = positions[todo, None] + offset + torch.arange(chunk)  # [N, chunk]
            valid = pos <= newest[todo, None]
            is_last = step_types[env_ids[todo, None], pos % self.max_length] == StepType.LAST
            hit = is_last & valid
            found = hit.any(1)
            first_hit = pos.gather(1, hit.int().argmax(1, keepdim=True)).squeeze(1)
            end[todo[found]] = first_hit[found]
            unresolved = ~found & valid[:, -1]
            todo = todo[unresolved]
            offset += chunk
        return end - positions
