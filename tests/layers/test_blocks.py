"""ResNet blocks: outputs by hand on 1x1 kernels, where the stride goes, shortcuts, and a
block's transposed twin restoring the shape."""

import pytest
import torch

import alf.layers as L
from alf.utils.math_ops import identity


def _set(conv, weight, bias=None):
    with torch.no_grad():
        conv.weight.fill_(weight)
        if bias is not None:
            conv.bias.fill_(bias)


def test_residue_block_by_hand():
    block = L.ResidueBlock(1, 1, 1, 1, activation=identity, with_batch_normalization=False)
    conv1, _, conv2 = block._core_layers
    _set(conv1, 2.0, 1.0)
    _set(conv2, 3.0, 0.5)
    x = torch.tensor([-1.0, 0.0, 2.0]).reshape(3, 1, 1, 1)
    # 3 * (2x + 1) + 0.5 + x = 7x + 3.5 (identity shortcut)
    assert torch.equal(block(x).flatten(), torch.tensor([-3.5, 3.5, 17.5]))
    assert block._shortcut_layers is None


def test_bottleneck_block_by_hand():
    block = L.BottleneckBlock(1, 1, (1, 1, 1), 1, with_batch_normalization=False)
    a, _, b, _, c = block._core_layers
    for conv, w in ((a, 2.0), (b, 1.0), (c, 3.0)):
        _set(conv, w)
        assert torch.equal(conv.bias, torch.zeros(1))  # zero biases, as ALF's
    x = torch.tensor([1.0, -1.0]).reshape(2, 1, 1, 1)
    # relu(3 relu(relu(2x)) + x): 7 for x = 1; relu(0 - 1) = 0 for x = -1
    assert torch.equal(block(x).flatten(), torch.tensor([7.0, 0.0]))


@pytest.mark.parametrize("v1_5, strides", [(True, (1, 2)), (False, (2, 1))])
def test_bottleneck_stride_placement(v1_5, strides):
    block = L.BottleneckBlock(4, 3, (2, 2, 8), 2, v1_5=v1_5)
    a, b = block._core_layers[0], block._core_layers[3]
    assert (a.stride[0], b.stride[0]) == strides
    assert block.calc_output_shape((4, 8, 8)) == (8, 4, 4)
    assert isinstance(block._shortcut_layers, torch.nn.Sequential)  # conv + batch norm


@pytest.mark.parametrize(
    "make",
    [
        lambda t: L.ResidueBlock(4, 4, 3, 2, transpose=t),
        lambda t: L.BottleneckBlock(4, 3, (2, 2, 4), 2, transpose=t),
    ],
)
def test_transposed_twin_restores_the_shape(make):
    torch.manual_seed(0)
    down, up = make(False), make(True)
    x = torch.randn(2, 4, 8, 8)
    assert down(x).shape == (2, 4, 4, 4)
    assert up(down(x)).shape == x.shape


def test_residue_block_takes_a_function_or_a_module_as_activation():
    x = torch.randn(2, 2, 5, 5)
    for act in (torch.relu_, torch.nn.ReLU()):
        torch.manual_seed(1)
        block = L.ResidueBlock(2, 2, 3, 1, activation=act, with_batch_normalization=False)
        out = block(x)
        assert out.shape == x.shape and bool((out >= 0).all())
