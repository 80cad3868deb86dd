"""Vectorized segment trees for prioritized replay: ``SumTree`` and ``MinTree``.

A segment tree over ``capacity`` leaves is a complete binary tree stored in one
array of ``2 * size`` nodes (``size`` = ``capacity`` rounded up to a power of
two): node 1 is the root, node ``k`` has children ``2k`` and ``2k + 1``, and leaf
``i`` is node ``size + i``. Every inner node holds ``op`` of its two children, so
the root is ``op`` over all leaves.

Everything is batched: setting ``B`` leaves recomputes their ``B`` ancestors one
level at a time (``log2(size)`` vectorized steps, ``O(B log N)`` work), and
``SumTree.find_sum_index`` walks ``B`` prefix sums down the tree together. Inner
nodes are always recomputed from their children rather than patched with
deltas, so sums never drift however many updates are made. Values are float64.

Prioritized replay (Schaul et al. 2016, "Prioritized Experience Replay",
Appendix B.2.1) samples leaf ``i`` with probability ``p_i / sum_j p_j`` by drawing
``u ~ U[0, sum)`` and finding the leaf whose prefix-sum interval holds ``u``; the
min tree gives ``min_j p_j`` for normalizing importance weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch


class SegmentTree:
    """A complete binary tree over ``capacity`` leaves whose nodes hold ``op`` of their children.

    Args:
        capacity: number of leaves.
        op: elementwise binary torch function (``torch.add``, ``torch.minimum``);
            must be associative with ``neutral`` as identity.
        neutral: value of empty leaves (``0`` for sums, ``inf`` for minima).
        dtype: dtype of the nodes.
    """

    def __init__(
        self,
        capacity: int,
        op: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        neutral: float,
        dtype: torch.dtype = torch.float64,
    ):
        if capacity <= 0:
            raise ValueError(f"SegmentTree capacity must be > 0, got {capacity}")
        self._capacity = capacity
        self._size = 1 << math.ceil(math.log2(capacity))
        self._depth = self._size.bit_length() - 1
        self._op = op
        self._neutral = neutral
        self._nodes = torch.full((2 * self._size,), neutral, dtype=dtype)

    @property
    def capacity(self) -> int:
        return self._capacity

    def nbytes(self) -> int:
        """Memory of the node array, in bytes."""
        return self._nodes.numel() * self._nodes.element_size()

    def summary(self) -> float:
        """``op`` over all leaves (the root)."""
        return float(self._nodes[1])

    def _check(self, indices: torch.Tensor) -> torch.Tensor:
        indices = torch.as_tensor(indices, dtype=torch.int64)
        if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= self._capacity):
            raise IndexError(
                f"SegmentTree leaf indices must be in [0, {self._capacity}), "
                f"got [{int(indices.min())}, {int(indices.max())}]"
            )
        return indices

    def __getitem__(self, indices) -> torch.Tensor:
        """Leaf values at ``indices`` ``[B]`` (int64): ``[B]``."""
        return self._nodes[self._check(indices) + self._size]

    def __setitem__(self, indices, values) -> None:
        """Set leaves ``indices`` ``[B]`` to ``values`` ``[B]`` (or a scalar) and update ancestors.

        With repeated indices, the value of the last occurrence is kept.
        """
        indices = self._check(indices).reshape(-1)
        values = torch.as_tensor(values, dtype=self._nodes.dtype).expand(indices.shape)
        indices, values = _last_occurrences(indices, values)
        nodes = indices + self._size
        self._nodes[nodes] = values
        for _ in range(self._depth):
            nodes = nodes // 2  # repeated parents get identical values
            self._nodes[nodes] = self._op(self._nodes[2 * nodes], self._nodes[2 * nodes + 1])

    def leaves(self) -> torch.Tensor:
        """A copy of all ``[capacity]`` leaf values."""
        return self._nodes[self._size : self._size + self._capacity].clone()

    def set_all(self, values: torch.Tensor) -> None:
        """Replace all ``[capacity]`` leaves by ``values`` and rebuild the tree in ``O(N)``."""
        values = torch.as_tensor(values, dtype=self._nodes.dtype).reshape(-1)
        if values.numel() != self._capacity:
            raise ValueError(
                f"SegmentTree.set_all needs {self._capacity} values, got {values.numel()}"
            )
        self._nodes.fill_(self._neutral)
        self._nodes[self._size : self._size + self._capacity] = values
        level = self._size
        while level > 1:
            children = self._nodes[level : 2 * level]
            self._nodes[level // 2 : level] = self._op(children[0::2], children[1::2])
            level //= 2


class SumTree(SegmentTree):
    """Sums of nonnegative leaf values, with prefix-sum search for sampling.

    Args:
        capacity: number of leaves (all 0 at first).
    """

    def __init__(self, capacity: int):
        super().__init__(capacity, torch.add, 0.0)

    def find_sum_index(self, values: torch.Tensor) -> torch.Tensor:
        """For each ``v`` of ``values`` ``[B]``, the leaf ``i`` with ``S(i) <= v < S(i + 1)``.

        ``S(i)`` is the sum of leaves ``0 .. i-1``. ``values`` should lie in
        ``[0, summary())``; the walk never enters a zero-sum subtree, so the result
        always has a positive value even when rounding puts ``v`` on a boundary.

        Returns:
            ``[B]`` int64 leaf indices.
        """
        if self.summary() <= 0:
            raise ValueError("SumTree.find_sum_index on a tree whose leaves sum to 0")
        values = torch.as_tensor(values, dtype=self._nodes.dtype).clone().reshape(-1)
        nodes = torch.ones_like(values, dtype=torch.int64)
        for _ in range(self._depth):
            left = 2 * nodes
            left_sum = self._nodes[left]
            right_sum = self._nodes[left + 1]
            go_left = ((values < left_sum) & (left_sum > 0)) | (right_sum <= 0)
            values = torch.where(go_left, values, values - left_sum)
            nodes = torch.where(go_left, left, left + 1)
        return nodes - self._size


class MinTree(SegmentTree):
    """Minima of leaf values (empty leaves are ``inf``).

    Args:
        capacity: number of leaves (all ``inf`` at first).
    """

    def __init__(self, capacity: int):
        super().__init__(capacity, torch.minimum, math.inf)


def _last_occurrences(indices: torch.Tensor, values: torch.Tensor):
    """``(indices, values)`` keeping only the last occurrence of each repeated index."""
    if indices.numel() <= 1:
        return indices, values
    order = torch.argsort(indices, stable=True)
    sorted_indices = indices[order]
    is_last = torch.ones_like(sorted_indices, dtype=torch.bool)
    is_last[:-1] = sorted_indices[1:] != sorted_indices[:-1]
    keep = order[is_last]
    return indices[keep], values[keep]
