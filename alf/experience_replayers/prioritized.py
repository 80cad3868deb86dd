"""``PrioritizedSampler``: the priorities of a ``ReplayBuffer``'s steps and sampling by them.

Schaul et al. 2016, "Prioritized Experience Replay", arXiv:1511.05952. Every stored
step ``i`` has a priority ``p_i``; a sequence starting at ``i`` is drawn with
probability ``P(i) = p_i^alpha / sum_j p_j^alpha`` over the valid starts ``j`` (steps
with ``batch_length - 1`` successors stored in the same env). New steps get the
largest priority seen so far (1 at first) so they are replayed at least once soon;
``update`` sets the priorities of replayed sequences (e.g. from ``|TD error|``),
clamped below at ``eps``. A sum tree gives ``O(B log N)`` vectorized sampling and
updates; a min tree gives the smallest priority for the importance weights
(see ``ReplayBuffer.get_batch``). The trees have one leaf per flat slot of the
buffer's ``RingPositions`` and hold ``p^alpha`` (0 where no step is stored).
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable

import torch

from alf.experience_replayers.ring import RingPositions
from alf.experience_replayers.segment_tree import MinTree, SumTree


class PrioritizedSampler:
    """Priority trees over the slots of ``ring``: new steps, updates, sampling, weights.

    Args:
        ring: the buffer's positions (read, never changed here).
        alpha: exponent of the priorities (0: uniform).
        beta: callable returning the current exponent of the importance weights.
        eps: the smallest priority ``update`` stores (keeps every step reachable).
    """

    def __init__(self, ring: RingPositions, alpha: float, beta: Callable[[], float], eps: float):
        self._ring = ring
        self._alpha = alpha
        self._beta = beta
        self._eps = eps
        self.max_priority = 1.0
        self._sum_tree = SumTree(ring.num_envs * ring.max_length)
        self._min_tree = MinTree(ring.num_envs * ring.max_length)

    def nbytes(self) -> int:
        """Memory of the two trees, in bytes."""
        return self._sum_tree.nbytes() + self._min_tree.nbytes()

    def _set_leaves(self, slots: torch.Tensor, values) -> None:
        """Set ``p^alpha`` of flat slots ``slots`` ``[K]`` in both trees."""
        self._sum_tree[slots] = values
        self._min_tree[slots] = values

    def mark_new(self, slots: torch.Tensor) -> None:
        """Give the steps just written at flat ``slots`` ``[K]`` the current ``max_priority``."""
        self._set_leaves(slots, self.max_priority**self._alpha)

    # -- sampling ----------------------------------------------------------------------

    def sample(self, batch_size: int, batch_length: int, generator):
        """``(env_ids, first_pos, importance_weights)`` ``[B]`` drawn by priority."""
        ring = self._ring
        with self._tail_excluded(batch_length):
            total = self._sum_tree.summary()
            if total <= 0:
                raise ring.no_starts_error(batch_length)
            mass = torch.rand(batch_size, dtype=torch.float64, generator=generator) * total
            leaves = self._sum_tree.find_sum_index(mass)
            priorities = self._sum_tree[leaves]
            min_priority = self._min_tree.summary()
        env_ids = leaves // ring.max_length
        first_pos = ring.start_of(env_ids, leaves % ring.max_length)
        weights = (min_priority / priorities) ** float(self._beta())
        return env_ids, first_pos, weights.to(torch.float32)

    @contextlib.contextmanager
    def _tail_excluded(self, batch_length: int):
        """Zero the priorities of each env's newest ``batch_length - 1`` steps meanwhile.

        They cannot start a full sequence; excluding them (rather than clipping
        starts) keeps ``P(i)`` exactly proportional to ``p_i^alpha`` over valid starts.
        """
        if batch_length <= 1:
            yield
            return
        leaves = self._ring.newest_slots(batch_length - 1)
        sums, minima = self._sum_tree[leaves], self._min_tree[leaves]
        self._sum_tree[leaves] = 0.0
        self._min_tree[leaves] = math.inf
        try:
            yield
        finally:
            self._sum_tree[leaves] = sums
            self._min_tree[leaves] = minima

    # -- updates -----------------------------------------------------------------------

    def update(self, env_ids, positions, priorities) -> None:
        """Set the priorities of the steps at ``positions`` of envs ``env_ids`` (see
        ``ReplayBuffer.update_priority``); steps no longer stored are skipped."""
        ring = self._ring
        env_ids = torch.as_tensor(env_ids).to(device="cpu", dtype=torch.int64).reshape(-1)
        positions = torch.as_tensor(positions).to(device="cpu", dtype=torch.int64).reshape(-1)
        priorities = torch.as_tensor(priorities).detach().to("cpu", torch.float64).reshape(-1)
        if not env_ids.shape == positions.shape == priorities.shape:
            raise ValueError(
                f"{ring.name}: update_priority got {env_ids.numel()} env ids, "
                f"{positions.numel()} positions and {priorities.numel()} priorities"
            )
        if not bool(torch.isfinite(priorities).all()) or bool((priorities < 0).any()):
            raise ValueError(f"{ring.name}: priorities must be finite and >= 0: {priorities}")
        priorities = priorities.clamp(min=self._eps)
        valid = (positions >= ring.first_pos()[env_ids]) & (positions < ring.current_pos[env_ids])
        if not bool(valid.any()):
            return
        priorities = priorities[valid]
        leaves = ring.slots(env_ids[valid], positions[valid])
        self._set_leaves(leaves, priorities**self._alpha)
        self.max_priority = max(self.max_priority, float(priorities.max()))

    def rebuild(self, values: torch.Tensor | None = None) -> None:
        """Rebuild both trees from ``[num_envs * max_length]`` ``p^alpha`` (the current
        leaves when None), zeroing the slots that hold no stored step (after a clear)."""
        values = self._sum_tree.leaves() if values is None else values
        values = torch.where(self._ring.valid_slots(), values.to(torch.float64).reshape(-1), 0.0)
        self._sum_tree.set_all(values)
        self._min_tree.set_all(torch.where(values > 0, values, math.inf))

    # -- checkpoints -------------------------------------------------------------------

    def state_dict(self) -> dict:
        """``priority`` (``p^alpha`` per slot, ``[num_envs, max_length]`` float64) and
        ``max_priority``."""
        leaves = self._sum_tree.leaves()
        return {
            "priority": leaves.reshape(self._ring.num_envs, self._ring.max_length),
            "max_priority": self.max_priority,
        }

    def load_state_dict(self, state: dict) -> None:
        """Load what ``state_dict`` wrote; a state without priorities (of a buffer that
        was not prioritized) gives every stored step ``max_priority``."""
        if "priority" in state:
            self.max_priority = float(state["max_priority"])
            self.rebuild(torch.as_tensor(state["priority"]).cpu())
        else:
            logging.warning("%s: no priorities in the state; using max_priority", self._ring.name)
            slots = self._ring.num_envs * self._ring.max_length
            self.rebuild(torch.full((slots,), self.max_priority**self._alpha))
