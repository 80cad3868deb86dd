"""``FC``, ``Conv2D``, ``ConvTranspose2D`` and their parallel forms: outputs against hand
computations on small weights, parallel layers equal to the loop of single ones, the
initializations ALF specifies, and state-dict round trips."""

import functools
import math

import pytest
import torch
from torch import nn

import alf
import alf.layers as L
from alf.utils.math_ops import identity


def _set(param, values):
    with torch.no_grad():
        param.copy_(torch.as_tensor(values, dtype=torch.float32).reshape(param.shape))


def test_fc_by_hand():
    fc = L.FC(2, 2, activation=torch.relu)
    _set(fc.weight, [[1.0, -1.0], [0.5, 2.0]])
    _set(fc.bias, [0.5, -3.0])
    x = torch.tensor([[2.0, 1.0], [1.0, 1.0]])
    # rows: [2-1+0.5, 1+2-3] = [1.5, 0]; [1-1+0.5, 0.5+2-3] = [0.5, relu(-0.5)=0]
    assert torch.equal(fc(x), torch.tensor([[1.5, 0.0], [0.5, 0.0]]))
    # more leading dimensions take the same path as a matmul
    assert torch.equal(fc(x[None].expand(3, 2, 2))[2], fc(x))


def test_fc_norms_by_hand():
    ln = L.FC(2, 2, use_ln=True)
    _set(ln.weight, [[1.0, 0.0], [0.0, 3.0]])
    _set(ln.bias, [0.0, 1.0])
    # pre-activation [1, 7]: mean 4, variance 9 -> [-1, 1] (up to LayerNorm's eps)
    expected = torch.tensor([[-1.0, 1.0]]) * 3 / math.sqrt(9 + 1e-5)
    assert torch.allclose(ln(torch.tensor([[1.0, 2.0]])), expected)
    assert L.FC(2, 2, use_bn=True).bias is None  # batch norm takes the bias's place
    no_bias = L.FC(2, 2, use_ln=True, use_bias=False)
    assert no_bias.bias is None and no_bias._ln.bias is None


def test_fc_initializations():
    torch.manual_seed(0)
    fc = L.FC(400, 300, activation=torch.relu_, bias_init_value=0.1)
    # variance scaling with relu's gain: std sqrt(2 / 400)
    assert fc.weight.std().item() == pytest.approx(math.sqrt(2 / 400), rel=0.02)
    assert fc.weight.abs().max().item() <= 2 * math.sqrt(2 / 400) / 0.8796 + 1e-6
    assert torch.equal(fc.bias, torch.full((300,), 0.1))
    gained = L.FC(400, 300, kernel_init_gain=0.5)
    assert gained.weight.std().item() == pytest.approx(0.5 / 20, rel=0.02)
    torch_like = L.FC(400, 300, use_torch_init=True)
    assert torch_like.weight.abs().max().item() <= 1 / 20 and torch_like.bias.abs().max() <= 1 / 20
    assert torch_like.bias.std().item() == pytest.approx(1 / 20 / math.sqrt(3), rel=0.1)
    custom = L.FC(3, 2, kernel_initializer=nn.init.ones_, bias_initializer=nn.init.ones_)
    assert torch.equal(custom.weight, torch.ones(2, 3)) and torch.equal(custom.bias, torch.ones(2))
    fc.reset_parameters()
    assert torch.equal(fc.bias, torch.full((300,), 0.1))


def test_opt_args_reach_the_parameters():
    fc = L.FC(2, 3, weight_opt_args=dict(lr_scale=0.1), bias_opt_args=dict(lr_scale=2.0))
    assert fc.weight.opt_args == dict(lr_scale=0.1) and fc.bias.opt_args == dict(lr_scale=2.0)


@pytest.mark.parametrize("kwargs", [dict(), dict(use_ln=True), dict(use_bias=False)])
def test_parallel_fc_equals_the_loop_of_fcs(kwargs):
    torch.manual_seed(1)
    fc = L.FC(5, 4, activation=torch.tanh, **kwargs)
    parallel = fc.make_parallel(3)
    assert isinstance(parallel, L.ParallelFC) and parallel.weight.shape == (3, 4, 5)
    singles = []
    for i in range(3):
        single = L.FC(5, 4, activation=torch.tanh, **kwargs)
        single.load_state_dict(_replica_state(parallel, i, kwargs))
        singles.append(single)
    own, shared = torch.randn(6, 3, 5), torch.randn(6, 5)
    assert torch.allclose(
        parallel(own), torch.stack([s(own[:, i]) for i, s in enumerate(singles)], 1), atol=1e-6
    )
    assert torch.allclose(parallel(shared), torch.stack([s(shared) for s in singles], 1), atol=1e-6)
    with pytest.raises(ValueError, match=r"expected \[B, 3, 5\] or \[B, 5\]"):
        parallel(torch.randn(6, 2, 5))


def _replica_state(parallel, i, kwargs):
    state = {"_weight": parallel.weight[i]}
    if parallel.bias is not None:
        state["_bias"] = parallel.bias[i]
    if kwargs.get("use_ln"):
        ln = parallel._ln
        rows = slice(4 * i, 4 * (i + 1))
        state.update({"_ln.weight": ln.weight[rows], "_ln.bias": ln.bias[rows]})
    return state


def test_parallel_fc_initializes_each_replica_as_an_fc():
    torch.manual_seed(0)
    parallel = L.ParallelFC(256, 64, n=4, use_torch_init=True)
    bound = 1 / 16
    for i in range(4):
        b = parallel.bias[i]
        assert b.abs().max().item() <= bound and b.std().item() > bound / 3  # every replica set
        assert not torch.equal(parallel.weight[0], parallel.weight[i]) or i == 0


def test_conv2d_by_hand():
    conv = L.Conv2D(1, 1, 2, activation=identity, strides=1)
    _set(conv.weight, [[1.0, 0.0], [0.0, -1.0]])
    _set(conv.bias, [0.5])
    img = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]).reshape(1, 1, 3, 3)
    # each output: top-left - bottom-right + 0.5 = -4 + 0.5
    assert torch.equal(conv(img), torch.full((1, 1, 2, 2), -3.5))
    strided = L.Conv2D(1, 1, 1, activation=identity, strides=2, padding=1)
    _set(strided.weight, [[2.0]])
    _set(strided.bias, [0.0])
    # padded to 5x5, every second pixel: the padding's zeros around 2 * 5
    expected = torch.tensor([[0.0, 0.0, 0.0], [0.0, 10.0, 0.0], [0.0, 0.0, 0.0]])
    assert torch.equal(strided(img)[0, 0], expected)


def test_conv_transpose_by_hand():
    deconv = L.ConvTranspose2D(1, 1, 2, activation=identity, strides=2, bias_init_value=1.0)
    _set(deconv.weight, [[1.0, 2.0], [3.0, 4.0]])
    assert torch.equal(deconv.bias, torch.ones(1))  # ALF: the constant, 0 included
    out = deconv(torch.tensor([[[[1.0, 10.0]]]]))
    assert torch.equal(out[0, 0], torch.tensor([[2.0, 3.0, 11.0, 21.0], [4.0, 5.0, 31.0, 41.0]]))


def test_conv_bias_initialization_follows_alf():
    torch.manual_seed(0)
    conv = L.Conv2D(16, 64, 3)  # bias_init_value 0: torch's uniform in +-1/sqrt(16*9)
    assert conv.bias.abs().max().item() <= 1 / 12 and conv.bias.std().item() > 1 / 60
    assert torch.equal(L.Conv2D(2, 3, 3, bias_init_value=0.2).bias, torch.full((3,), 0.2))
    assert L.Conv2D(2, 3, 3, use_bn=True).bias is None
    assert L.Conv2D(2, 3, 3, use_bn=True, use_bias=True).bias is not None


@pytest.mark.parametrize(
    "layer",
    [
        functools.partial(L.Conv2D, 3, 4, 3, strides=2, padding=1),
        functools.partial(L.Conv2D, 3, 4, 3, use_ln=True, activation=torch.tanh),
        functools.partial(L.ConvTranspose2D, 3, 4, 3, strides=2, output_padding=1),
    ],
)
def test_parallel_conv_equals_the_loop_of_convs(layer):
    torch.manual_seed(2)
    parallel = layer().make_parallel(3)
    own, shared = torch.randn(2, 3, 3, 7, 7), torch.randn(2, 3, 7, 7)
    singles = []
    for i in range(3):
        single = layer()
        single.load_state_dict(_conv_replica_state(parallel, i))
        singles.append(single)
    looped = torch.stack([s(own[:, i]) for i, s in enumerate(singles)], 1)
    assert torch.allclose(parallel(own), looped, atol=1e-5)
    assert torch.allclose(parallel(shared), torch.stack([s(shared) for s in singles], 1), atol=1e-5)


def _conv_replica_state(parallel, i):
    state = {"_conv.weight": parallel.weight[i], "_conv.bias": parallel.bias[i]}
    if parallel._ln is not None:
        rows = slice(4 * i, 4 * (i + 1))
        state.update({"_ln.weight": parallel._ln.weight[rows], "_ln.bias": parallel._ln.bias[rows]})
    return state


def test_state_dict_round_trip_gives_identical_outputs():
    torch.manual_seed(3)
    layers = [L.FC(4, 3, use_ln=True), L.ParallelFC(4, 3, 2), L.Conv2D(2, 3, 3, use_bn=True)]
    inputs = [torch.randn(5, 4), torch.randn(5, 2, 4), torch.randn(5, 2, 6, 6)]
    torch.manual_seed(4)
    fresh = [L.FC(4, 3, use_ln=True), L.ParallelFC(4, 3, 2), L.Conv2D(2, 3, 3, use_bn=True)]
    for layer, other, x in zip(layers, fresh, inputs):
        layer.eval(), other.eval()
        assert not torch.equal(layer(x), other(x))
        other.load_state_dict(layer.state_dict())
        assert torch.equal(layer(x), other(x))


def test_layers_are_configurable_by_alf_names():
    alf.reset_configs()
    try:
        alf.config("FC", activation=torch.tanh, bias_init_value=0.5)
        assert torch.equal(L.FC(2, 3).bias, torch.full((3,), 0.5))
        with pytest.raises(ValueError, match="already parallel"):
            L.ParallelFC(2, 3, 2).make_parallel(2)
    finally:
        alf.reset_configs()


def test_conv_bias_initializer_initializes_each_replica():
    from alf.layers import Conv2D

    conv = Conv2D(2, 3, 3, bias_initializer=torch.nn.init.ones_)
    assert torch.equal(conv.bias, torch.ones(3))
    parallel = conv.make_parallel(2)
    assert torch.equal(parallel.bias, torch.ones(2, 3))


@pytest.mark.parametrize("out", [1, 3])
@pytest.mark.parametrize("shared_input", [False, True])
def test_batched_affine_is_baddbmm_values_and_gradients(out, shared_input):
    """One output column takes the transposed layout (``_OneColumn``); its values and
    gradients are ``baddbmm``'s (any width, a shared expanded input included)."""
    from alf.layers.dense import batched_affine

    gen = torch.Generator().manual_seed(11)
    shape = (5, 7) if shared_input else (3, 5, 7)
    x = torch.randn(shape, generator=gen, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(3, 7, out, generator=gen, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(3, 1, out, generator=gen, dtype=torch.float64, requires_grad=True)
    grad_out = torch.randn(3, 5, out, generator=gen, dtype=torch.float64)

    def product(f, bias, x, weight):  # a shared input is expanded, as the critics do
        return f(bias, x.expand(3, 5, 7), weight)

    y = product(batched_affine, bias, x, weight)
    expected = product(torch.baddbmm, bias, x, weight)
    torch.testing.assert_close(y, expected, rtol=1e-12, atol=1e-12)
    got = torch.autograd.grad(y, (x, weight, bias), grad_out)
    want = torch.autograd.grad(expected, (x, weight, bias), grad_out)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    check = functools.partial(product, batched_affine)
    assert torch.autograd.gradcheck(check, (bias, x, weight))
