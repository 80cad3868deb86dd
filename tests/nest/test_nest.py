"""Tests of alf.nest."""

from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import pytest
import torch

import alf.nest as nest


class Pair(NamedTuple):
    a: object = ()
    b: object = ()


def _example():
    return Pair(a={"y": np.array([1.0, 2.0]), "x": [torch.tensor(3.0), None]}, b=5)


def test_flatten_order_is_sorted_by_key_and_deterministic():
    leaves = nest.flatten(_example())
    assert len(leaves) == 3
    assert float(leaves[0]) == 3.0
    np.testing.assert_array_equal(leaves[1], [1.0, 2.0])
    assert leaves[2] == 5


def test_pack_sequence_as_round_trip_and_count_error():
    ex = _example()
    packed = nest.pack_sequence_as(ex, [10, 20, 30])
    assert packed.b == 30 and packed.a["x"][0] == 10 and packed.a["y"] == 20
    assert packed.a["x"][1] is None
    with pytest.raises(ValueError, match="Cannot pack 2 values"):
        nest.pack_sequence_as(ex, [1, 2])


def test_map_structure_multiple_and_mismatch():
    out = nest.map_structure(lambda x, y: x + y, Pair(1, {"k": 2}), Pair(10, {"k": 20}))
    assert out == Pair(11, {"k": 22})
    with pytest.raises(ValueError, match="same structure"):
        nest.map_structure(lambda x, y: x, Pair(1, 2), Pair(1, {"k": 2}))


def test_paths_use_field_names():
    paths = [p for p, _ in nest.flatten_with_path(_example())]
    assert paths == ["a.x.0", "a.y", "b"]
    out = nest.map_structure_with_path(lambda p, x: p, Pair(1, [2, 3]))
    assert out == Pair("a", ["b.0", "b.1"])


def test_paths_pair_with_their_leaves_in_ordered_dicts_as_in_state_dicts():
    # A torch state_dict is an OrderedDict: optree keeps its insertion order, unlike a dict's.
    state = OrderedDict([("b.weight", 0), ("b.bias", 1), ("a", 2)])
    assert nest.flatten_with_path(state) == [("b.weight", 0), ("b.bias", 1), ("a", 2)]
    plain = {"b.weight": 0, "b.bias": 1, "a": 2}
    assert nest.flatten_with_path(plain) == [("a", 2), ("b.bias", 1), ("b.weight", 0)]
    out = nest.map_structure_with_path(lambda p, x: f"{p}={x}", {"m": state})
    assert list(out["m"].items()) == [(k, f"m.{k}={v}") for k, v in state.items()]


def test_get_and_set_field():
    ex = _example()
    assert nest.get_field(ex, "b") == 5
    assert float(nest.get_field(ex, "a.x.0")) == 3.0
    new = nest.set_field(ex, "a.y", "new")
    assert new.a["y"] == "new" and ex.a["y"] is not "new"  # noqa: F632
    assert new.b == 5


def test_stack_and_unstack_numpy_and_torch():
    n1 = Pair(np.array([1, 2]), torch.tensor([1.0]))
    n2 = Pair(np.array([3, 4]), torch.tensor([2.0]))
    stacked = nest.stack_nests([n1, n2])
    np.testing.assert_array_equal(stacked.a, [[1, 2], [3, 4]])
    assert stacked.b.tolist() == [[1.0], [2.0]]
    back = nest.unstack_nest(stacked)
    np.testing.assert_array_equal(back[1].a, [3, 4])
    assert back[0].b.tolist() == [1.0]


def test_batch_size_and_to_torch_numpy():
    n = {"o": np.zeros((4, 3), np.float32), "r": np.ones(4, np.float32)}
    assert nest.get_nest_batch_size(n) == 4
    t = nest.nest_to_torch(n)
    assert t["o"].dtype == torch.float32 and t["r"].sum().item() == 4.0
    back = nest.nest_to_numpy(t)
    np.testing.assert_array_equal(back["r"], n["r"])
    b = nest.batch_nest({"x": torch.tensor(2.0)})
    assert b["x"].shape == (1,)


def test_prune_nest_like():
    full = {"a": 1, "b": Pair(2, 3), "c": 4}
    assert nest.prune_nest_like(full, {"b": Pair(0, 0)}) == {"b": Pair(2, 3)}
