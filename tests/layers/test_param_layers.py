"""``ParamFC`` and ``ParamConv2D``: each replica against torch's functional layer with the
parameters read from its row of ``theta``, the accepted inputs, gradients to ``theta``,
reinitialization and the refusals."""

import pytest
import torch
import torch.nn.functional as F

import alf.layers as L
from alf.utils.math_ops import identity


def test_param_fc_by_hand():
    layer = L.ParamFC(2, 1, activation=identity)
    layer.set_parameters(torch.tensor([2.0, -1.0, 0.5]))  # weight [[2, -1]], bias [0.5]
    assert torch.equal(layer(torch.tensor([[3.0, 1.0]])), torch.tensor([[5.5]]))


@pytest.mark.parametrize("use_bias", [True, False])
def test_param_fc_replicas(use_bias):
    torch.manual_seed(0)
    layer = L.ParamFC(4, 3, activation=torch.tanh, use_bias=use_bias)
    assert layer.param_length == 12 + 3 * use_bias
    theta = torch.randn(5, layer.param_length, requires_grad=True)
    layer.set_parameters(theta)
    assert layer.n_groups == 5 and layer.weight.shape == (5, 3, 4)
    own, shared = torch.randn(6, 5, 4), torch.randn(6, 4)
    y_own, y_shared = layer(own), layer(shared)
    assert y_own.shape == y_shared.shape == (6, 5, 3)
    for i in range(5):
        w = theta[i, :12].view(3, 4)
        b = theta[i, 12:] if use_bias else None
        assert torch.allclose(y_own[:, i], torch.tanh(F.linear(own[:, i], w, b)), atol=1e-6)
        assert torch.allclose(y_shared[:, i], torch.tanh(F.linear(shared, w, b)), atol=1e-6)
    y_own.sum().backward()
    assert theta.grad is not None and theta.grad.abs().sum(1).gt(0).all()


def test_param_fc_one_set_and_reinitialization():
    torch.manual_seed(1)
    layer = L.ParamFC(100, 50, bias_init_value=0.3)
    assert layer.n_groups == 1 and layer(torch.randn(7, 100)).shape == (7, 50)
    theta = torch.zeros(2, layer.param_length)
    layer.set_parameters(theta, reinitialize=True)
    # theta itself now holds the initialization: relu's variance scaling over fan-in 100
    weights = theta[:, :5000]
    assert weights.std().item() == pytest.approx((2 / 100) ** 0.5, rel=0.05)
    assert torch.equal(theta[:, 5000:], torch.full((2, 50), 0.3))
    assert torch.equal(layer.weight, weights.view(2, 50, 100))


def test_param_conv2d_by_hand():
    layer = L.ParamConv2D(1, 1, 2, activation=identity, use_bias=True)
    layer.set_parameters(torch.tensor([1.0, 0.0, 0.0, -1.0, 0.5]))  # a diagonal difference
    img = torch.tensor([[[[1.0, 2.0], [3.0, 5.0]]]])
    assert torch.equal(layer(img), torch.tensor([[[[1.0 - 5.0 + 0.5]]]]))


@pytest.mark.parametrize("use_bias", [True, False])
def test_param_conv2d_replicas(use_bias):
    torch.manual_seed(2)
    layer = L.ParamConv2D(2, 3, 3, activation=torch.tanh, strides=2, padding=1,
                          use_bias=use_bias, pooling_kernel=2)  # fmt: skip
    wl = 3 * 2 * 3 * 3
    theta = torch.randn(4, layer.param_length, requires_grad=True)
    layer.set_parameters(theta)
    own, shared = torch.randn(5, 4, 2, 8, 8), torch.randn(5, 2, 8, 8)
    outs = [layer(own), layer(own.reshape(5, 8, 8, 8)), layer(shared)]
    assert all(o.shape == (5, 4, 3, 2, 2) for o in outs)
    assert torch.equal(outs[0], outs[1])
    merged = layer(shared, keep_group_dim=False)
    assert torch.equal(merged, outs[2].reshape(5, 12, 2, 2))
    for i in range(4):
        w = theta[i, :wl].view(3, 2, 3, 3)
        b = theta[i, wl:] if use_bias else None
        for out, x in ((outs[0], own[:, i]), (outs[2], shared)):
            expected = F.max_pool2d(torch.tanh(F.conv2d(x, w, b, stride=2, padding=1)), 2)
            assert torch.allclose(out[:, i], expected, atol=1e-5)
    outs[0].sum().backward()
    assert theta.grad.abs().sum(1).gt(0).all()


def test_param_conv2d_one_set():
    torch.manual_seed(3)
    layer = L.ParamConv2D(2, 3, (3, 1), use_bias=True)
    assert layer.weight.shape == (3, 2, 3, 1) and layer.bias.shape == (3,)
    assert layer(torch.randn(4, 2, 5, 5)).shape == (4, 3, 3, 5)


def test_refusals():
    with pytest.raises(ValueError, match="ParamFC: use_ln=True is not supported"):
        L.ParamFC(2, 3, use_ln=True, n_groups=2)
    with pytest.raises(ValueError, match="ParamConv2D: use_ln=True is not supported"):
        L.ParamConv2D(2, 3, 3, use_ln=True, n_groups=2)
    layer = L.ParamFC(2, 3)
    with pytest.raises(ValueError, match=r"theta of shape \(2, 8\), expected \[n, 9\]"):
        layer.set_parameters(torch.zeros(2, 8))
    layer.set_parameters(torch.zeros(2, 9))
    with pytest.raises(ValueError, match="ParamFC: input of shape"):
        layer(torch.zeros(4, 3, 2))
    conv = L.ParamConv2D(2, 3, 3)
    with pytest.raises(ValueError, match="ParamConv2D: input of shape"):
        conv(torch.zeros(4, 3, 5, 5))
