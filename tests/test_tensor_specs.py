"""Tests of alf.tensor_specs."""

import pickle

import gymnasium as gym
import numpy as np
import pytest
import torch

from alf.tensor_specs import (
    BoundedTensorSpec,
    TensorSpec,
    tensor_spec_from_gym_space,
    tensor_spec_to_gym_space,
    zeros_from_spec,
)


def test_tensor_spec_zeros_and_dtypes():
    spec = TensorSpec((2, 3), np.float32)
    assert spec.dtype == torch.float32 and spec.numpy_dtype == np.float32
    z = spec.zeros(outer_dims=(4,))
    assert z.shape == (4, 2, 3) and float(z.abs().sum()) == 0.0
    assert spec.numpy_zeros(5).shape == (5, 2, 3)
    assert TensorSpec((), "int64").is_discrete and spec.is_continuous
    assert TensorSpec.from_tensor(torch.zeros(7, 3), from_dim=1) == TensorSpec((3,))


def test_bounded_sample_within_bounds_and_covers_all_integers():
    spec = BoundedTensorSpec((), "int64", 2, 5)
    samples = spec.sample(outer_dims=(2000,), generator=torch.Generator().manual_seed(0))
    assert set(samples.tolist()) == {2, 3, 4, 5}
    assert spec.num_values == 4
    cont = BoundedTensorSpec((3,), "float32", [-1, 0, 1], [0, 1, 2])
    x = cont.sample((1000,))
    assert bool((x >= torch.tensor([-1.0, 0, 1])).all() and (x <= torch.tensor([0.0, 1, 2])).all())


def test_bounded_validation_errors():
    with pytest.raises(ValueError, match="minimum"):
        BoundedTensorSpec((2,), "float32", 1.0, 0.0)
    with pytest.raises(ValueError, match="does not broadcast"):
        BoundedTensorSpec((2,), "float32", [0, 0, 0], 1)


def test_contains():
    spec = BoundedTensorSpec((), "int64", 0, 1)
    assert spec.contains(np.int64(1))
    assert not spec.contains(np.int64(2))
    assert not spec.contains(np.array([0]))


def test_equality_hash_and_pickle():
    a = BoundedTensorSpec((2,), "float32", -1, 1)
    b = BoundedTensorSpec((2,), np.float32, -1.0, 1.0)
    assert a == b and hash(a) == hash(b)
    assert a != BoundedTensorSpec((2,), "float32", -2, 1)
    assert a != TensorSpec((2,))
    assert pickle.loads(pickle.dumps(a)) == a


def test_gym_space_round_trip():
    space = gym.spaces.Dict(
        {
            "box": gym.spaces.Box(-2.0, 3.0, (4,), np.float64),
            "disc": gym.spaces.Discrete(5, start=2),
            "multi": gym.spaces.MultiDiscrete([2, 3]),
            "bin": gym.spaces.MultiBinary(3),
            "tup": gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Box(0, 1, (1,))]),
        }
    )
    spec = tensor_spec_from_gym_space(space)
    assert spec["box"] == BoundedTensorSpec((4,), "float32", -2.0, 3.0)
    assert spec["disc"] == BoundedTensorSpec((), "int64", 2, 6)
    np.testing.assert_array_equal(spec["multi"].maximum, [1, 2])
    assert spec["bin"].dtype == torch.int8
    assert isinstance(spec["tup"], tuple) and spec["tup"][0].num_values == 2
    back = tensor_spec_to_gym_space(spec)
    assert back["disc"] == gym.spaces.Discrete(5, start=2)
    assert back["multi"] == gym.spaces.MultiDiscrete([2, 3])
    assert back["bin"] == gym.spaces.MultiBinary(3)
    assert back["box"].shape == (4,) and float(back["box"].high[0]) == 3.0
    spec2 = tensor_spec_from_gym_space(back)
    for key in ("box", "disc", "multi", "bin"):
        assert spec2[key] == spec[key]


def test_zeros_from_spec_nest():
    z = zeros_from_spec({"a": TensorSpec((2,)), "b": TensorSpec((), "int32")}, batch_size=3)
    assert z["a"].shape == (3, 2) and z["b"].dtype == torch.int32
