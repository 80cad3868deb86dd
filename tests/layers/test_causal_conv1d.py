"""``CausalConv1D``: taps worked by hand (plain, dilated, hiding the present), causality by
gradients, the initialization and the refusal."""

import pytest
import torch

import alf.layers as L
from alf.utils.math_ops import identity


def _layer(weight, bias=0.5, **kwargs):
    layer = L.CausalConv1D(1, 1, len(weight), activation=identity, **kwargs)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight).view(1, 1, -1))
        layer.bias.fill_(bias)
    return layer


X = torch.tensor([[[1.0, 2.0, 3.0, 4.0]]])


def test_taps_by_hand():
    # y[t] = 10 x[t - 1] + x[t] + 0.5
    assert torch.equal(_layer([10.0, 1.0])(X), torch.tensor([[[1.5, 12.5, 23.5, 34.5]]]))
    # y[t] = 10 x[t - 2] + x[t] + 0.5
    dilated = _layer([10.0, 1.0], dilation=2)
    assert torch.equal(dilated(X), torch.tensor([[[1.5, 2.5, 13.5, 24.5]]]))
    # y[t] = 10 x[t - 2] + x[t - 1] + 0.5
    hidden = _layer([10.0, 1.0], hide_current=True)
    assert torch.equal(hidden(X), torch.tensor([[[0.5, 1.5, 12.5, 23.5]]]))


@pytest.mark.parametrize(
    "kwargs",
    [dict(kernel_size=3), dict(kernel_size=2, dilation=3), dict(kernel_size=3, hide_current=True)],
)
def test_no_output_reads_the_future(kwargs):
    torch.manual_seed(0)
    layer = L.CausalConv1D(3, 4, activation=torch.tanh, **kwargs)
    x = torch.randn(2, 3, 9, requires_grad=True)
    y = layer(x)
    assert y.shape == (2, 4, 9)
    for t in range(9):
        (grad,) = torch.autograd.grad(y[..., t].sum(), x, retain_graph=True)
        reads = grad.abs().sum(dim=(0, 1)) > 0
        last = t - 1 if kwargs.get("hide_current") else t
        assert not reads[last + 1 :].any(), t
        assert reads[max(last, 0)] or last < 0


def test_initialization_and_batch_norm():
    torch.manual_seed(1)
    layer = L.CausalConv1D(50, 40, 4, bias_init_value=0.2)
    # variance scaling with relu's gain over fan-in 50 * 4
    assert layer.weight.std().item() == pytest.approx((2 / 200) ** 0.5, rel=0.05)
    assert torch.equal(layer.bias, torch.full((40,), 0.2))
    bn = L.CausalConv1D(2, 3, 2, use_bn=True)
    assert bn.bias is None and bn(torch.randn(4, 2, 5)).shape == (4, 3, 5)
    assert L.CausalConv1D(2, 3, 2, use_bn=True, use_bias=True).bias is not None


def test_hiding_the_present_needs_dilation_one():
    with pytest.raises(ValueError, match="dilation=2 with hide_current"):
        L.CausalConv1D(1, 1, 2, dilation=2, hide_current=True)
