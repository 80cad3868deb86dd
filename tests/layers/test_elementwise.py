"""Parameterless layers of ``alf.layers``: values against hand-written results, the batch
dimension never counted, and their parallel forms on ``[B, n, ...]``."""

import pytest
import torch

import alf.layers as L
from alf.data_structures import TimeStep


def _x(*shape):
    return torch.arange(float(torch.Size(shape).numel())).reshape(shape)


def test_shape_layers_do_not_count_the_batch_dimension():
    x = _x(2, 3, 4)
    assert torch.equal(L.Transpose()(x), x.transpose(1, 2))
    assert torch.equal(L.Transpose(0, -1)(x), x.transpose(1, 2))
    assert torch.equal(L.Permute(1, 0)(x), x.permute(0, 2, 1))
    assert L.Reshape(12)(x).shape == (2, 12)
    assert torch.equal(L.Reshape((4, 3))(x), x.reshape(2, 4, 3))
    assert torch.equal(L.Reshape(-1)(x)[1], torch.arange(12.0, 24.0))
    assert torch.equal(L.Reshape(shape=())(x[:, :1, :1]), x[:, 0, 0])
    with pytest.raises(ValueError, match="give the shape once"):
        L.Reshape(2, shape=(2,))
    assert torch.equal(L.Sum(0)(x), torch.tensor([[12.0, 15, 18, 21], [48, 51, 54, 57]]))
    assert torch.equal(L.Sum((0, 1))(x), torch.tensor([66.0, 210.0]))
    assert torch.equal(L.Sum(-1)(x)[0], torch.tensor([6.0, 22.0, 38.0]))


def test_parallel_forms_skip_the_replica_dimension_too():
    x = _x(2, 3, 4, 5)  # [B, n=3, 4, 5]
    for layer, single in [
        (L.Transpose(0, 1), lambda y: y.transpose(1, 2)),
        (L.Permute(1, 0), lambda y: y.permute(0, 2, 1)),
        (L.Sum(1), lambda y: y.sum(2)),
        (L.Reshape(20), lambda y: y.reshape(y.shape[0], 20)),
    ]:
        parallel = layer.make_parallel(3)(x)
        looped = torch.stack([single(x[:, i]) for i in range(3)], dim=1)
        assert torch.equal(parallel, looped), layer


def test_value_layers():
    x = torch.tensor([[1.0, -2.0], [3.0, 0.5]])
    assert torch.equal(L.Scale(-2.0)(x), torch.tensor([[-2.0, 4.0], [-6.0, -1.0]]))
    assert L.Cast(torch.int64)(x).dtype == torch.int64
    assert L.Identity()(x) is x
    assert torch.equal(L.AddN()([x, x, 2 * x]), 4 * x)
    assert torch.equal(L.Lambda(lambda y: y[:, :1] * 10)(x), torch.tensor([[10.0], [30.0]]))
    one_hot = L.OneHot(3)(torch.tensor([[2], [0]]))
    assert one_hot.dtype == torch.float32
    assert torch.equal(one_hot, torch.tensor([[[0.0, 0, 1]], [[1.0, 0, 0]]]))
    for layer in (L.Identity(), L.Scale(2.0), L.Detach(), L.OneHot(3)):
        assert type(layer.make_parallel(4)) is type(layer)


def test_gradient_layers():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = L.ScaleGradient(0.25)(x)
    assert torch.equal(y, x.detach())
    (3.0 * y).sum().backward()
    assert torch.equal(x.grad, torch.tensor([0.75, 0.75]))
    detached = L.Detach()(dict(a=x * 2, b=(x,)))
    assert not detached["a"].requires_grad and not detached["b"][0].requires_grad
    assert torch.equal(detached["a"], torch.tensor([2.0, 4.0]))


def test_get_fields_by_path():
    step = TimeStep(observation=dict(image=1, goal=dict(pos=2)), reward=3)
    assert L.GetFields("reward")(step) == 3
    assert L.GetFields(("observation.goal.pos", "reward"))(step) == (2, 3)
    assert L.GetFields(a="observation.image", b="reward")(step) == dict(a=1, b=3)
    with pytest.raises(ValueError, match="not both"):
        L.GetFields(("reward",), a="reward")


def test_permute_refuses_a_non_permutation():
    with pytest.raises(ValueError, match="permutation"):
        L.Permute(0, 2)
