"""Sum and min trees: values against brute force, prefix-sum search, no drift, edge cases."""

import math

import pytest
import torch

from alf.experience_replayers.segment_tree import MinTree, SumTree


def _brute_find(leaves: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """The leaf whose prefix-sum interval ``[S(i), S(i+1))`` holds each value."""
    return torch.searchsorted(torch.cumsum(leaves, 0), values, right=True)


@pytest.mark.parametrize("capacity", [1, 5, 8, 37])
def test_sum_and_min_match_brute_force_after_random_updates(capacity):
    generator = torch.Generator().manual_seed(capacity)
    sum_tree, min_tree = SumTree(capacity), MinTree(capacity)
    leaves = torch.zeros(capacity, dtype=torch.float64)
    for _ in range(20):
        index = torch.randint(0, capacity, (4,), generator=generator)
        values = torch.rand(4, generator=generator, dtype=torch.float64)
        sum_tree[index] = values
        min_tree[index] = values
        for i, v in zip(index.tolist(), values.tolist()):
            leaves[i] = v
        assert torch.equal(sum_tree.leaves(), leaves)
        assert sum_tree.summary() == pytest.approx(float(leaves.sum()), rel=1e-12)
        stored = leaves[min_tree.leaves() < math.inf]
        assert min_tree.summary() == float(stored.min())


def test_repeated_index_keeps_the_last_value():
    tree = SumTree(4)
    tree[torch.tensor([2, 1, 2, 2])] = torch.tensor([5.0, 1.0, 7.0, 3.0])
    assert tree.leaves().tolist() == [0.0, 1.0, 3.0, 0.0]
    assert tree.summary() == 4.0


def test_scalar_value_broadcasts_and_getitem_reads_leaves():
    tree = MinTree(6)
    tree[torch.tensor([0, 4])] = 2.5
    assert tree[torch.tensor([4, 0, 1])].tolist() == [2.5, 2.5, math.inf]
    assert tree.summary() == 2.5


def test_find_sum_index_matches_prefix_sums():
    generator = torch.Generator().manual_seed(0)
    leaves = torch.rand(50, generator=generator, dtype=torch.float64)
    leaves[::3] = 0.0  # empty leaves are never returned
    tree = SumTree(50)
    tree.set_all(leaves)
    values = torch.rand(2000, generator=generator, dtype=torch.float64) * tree.summary()
    found = tree.find_sum_index(values)
    assert torch.equal(found, _brute_find(leaves, values))
    assert bool((leaves[found] > 0).all())


def test_find_sum_index_at_the_boundaries_returns_a_positive_leaf():
    tree = SumTree(6)
    tree[torch.tensor([1, 3])] = torch.tensor([2.0, 1.0])
    values = torch.tensor([0.0, 1.999, 2.0, 2.999, 3.0, 10.0], dtype=torch.float64)
    assert tree.find_sum_index(values).tolist() == [1, 1, 3, 3, 3, 3]


def test_find_sum_index_on_an_empty_tree_raises():
    with pytest.raises(ValueError, match="sum to 0"):
        SumTree(3).find_sum_index(torch.zeros(2))


def test_set_all_equals_incremental_updates():
    values = torch.arange(1.0, 12.0, dtype=torch.float64)
    incremental, rebuilt = MinTree(11), MinTree(11)
    incremental[torch.arange(11)] = values
    rebuilt.set_all(values)
    assert torch.equal(incremental._nodes, rebuilt._nodes)
    with pytest.raises(ValueError, match="needs 11 values"):
        rebuilt.set_all(values[:3])


def test_many_updates_do_not_drift():
    tree = SumTree(64)
    generator = torch.Generator().manual_seed(1)
    for _ in range(300):
        index = torch.randint(0, 64, (16,), generator=generator)
        tree[index] = torch.rand(16, generator=generator, dtype=torch.float64) * 1e6
    tree[torch.arange(64)] = 0.0
    assert tree.summary() == 0.0


def test_bad_indices_and_capacity_raise():
    tree = SumTree(4)
    with pytest.raises(IndexError, match=r"\[0, 4\)"):
        tree[torch.tensor([4])] = 1.0
    with pytest.raises(IndexError):
        tree[torch.tensor([-1])]
    with pytest.raises(ValueError, match="capacity"):
        SumTree(0)
