"""Signed permutations and ``Mirror``: numbers, validation, clear errors."""

import numpy as np
import pytest
import torch

from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils.mirror import Mirror, SignedPermutation


def test_signed_permutation_maps_by_hand():
    swap = SignedPermutation([1, 0, 2], signs=[1, 1, -1], name="toy")
    x = torch.tensor([[1.0, 2.0, 3.0], [-4.0, 5.0, 0.5]])
    assert torch.equal(swap(x), torch.tensor([[2.0, 1.0, -3.0], [5.0, -4.0, -0.5]]))
    assert torch.equal(swap(swap(x)), x)
    assert np.array_equal(swap.numpy(x.numpy()), swap(x).numpy())
    assert swap.size == 3 and list(swap.indices) == [1, 0, 2] and list(swap.signs) == [1, 1, -1]


def test_signed_permutation_is_differentiable():
    swap = SignedPermutation([1, 0], signs=[-1, -1])
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (swap(x) * torch.tensor([10.0, 100.0])).sum().backward()
    # y0 = -x1, y1 = -x0 -> d/dx0 = -100, d/dx1 = -10
    assert torch.equal(x.grad, torch.tensor([-100.0, -10.0]))


@pytest.mark.parametrize(
    "indices, signs, message",
    [
        ([0, 0, 1], None, "toy indices must be a permutation of 0..2"),
        ([0, 1, 3], None, "toy indices must be a permutation"),
        ([[0, 1]], None, "toy indices must be a non-empty 1-D"),
        ([0.0, 1.0], None, "toy indices must hold integers"),
        ([1, 0], [1, 1, 1], "toy signs must have length 2"),
        ([1, 0], [1, 0.5], r"toy signs must hold only \+1 or -1"),
        ([1, 2, 0], None, "toy is not an involution"),
        ([1, 0], [1, -1], "toy is not an involution"),
    ],
)
def test_signed_permutation_rejects_bad_maps(indices, signs, message):
    with pytest.raises(ValueError, match=message):
        SignedPermutation(indices, signs, name="toy")


def test_mirror_error_names_env_and_field():
    with pytest.raises(ValueError, match="Hopper mirror_action is not an involution"):
        Mirror([0, 1], [1, 2, 0], name="Hopper")
    with pytest.raises(ValueError, match="Hopper mirror_observation indices must be a perm"):
        Mirror([0, 2], [0], name="Hopper")


def test_mirror_check_specs():
    mirror = Mirror([1, 0], [0], name="pair")
    mirror.check_specs(TensorSpec((2,)), BoundedTensorSpec((1,), minimum=-1.0, maximum=1.0))
    with pytest.raises(ValueError, match="alg: pair mirror_observation has 2 entries but the obs"):
        mirror.check_specs(TensorSpec((3,)), TensorSpec((1,)), "alg")
    with pytest.raises(ValueError, match="alg: the mirror loss supports a single flat observ"):
        mirror.check_specs({"a": TensorSpec((2,))}, TensorSpec((1,)), "alg")
    with pytest.raises(ValueError, match="alg: the mirror loss needs a rank-1 action"):
        mirror.check_specs(TensorSpec((2,)), TensorSpec((1, 1)), "alg")
