"""ResNet blocks with ALF's arguments: ``ResidueBlock`` (two convolutions, ResNet-18/34) and
``BottleneckBlock`` (1x1, kxk, 1x1, ResNet-50), each ``relu(core(x) + shortcut(x))`` where the
shortcut is the identity, or a strided 1x1 convolution (with batch normalization) when the
shape changes (He et al. 2016, "Deep residual learning for image recognition").

With ``transpose=True`` the convolutions are transposed ones that grow the image by
``stride`` instead of shrinking it: a block and its transposed twin built with the same
arguments give ``LT(L(x)).shape == x.shape`` when ``stride`` divides the image size.
Weights start as ``kaiming_normal_``; without batch normalization the layers have biases
(zeros in ``BottleneckBlock``, torch's default in ``ResidueBlock``, as in ALF).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

import alf
from alf.layers.elementwise import Lambda


def _conv_transpose_2d(in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True):
    """A transposed convolution whose output is exactly ``stride`` times its input."""
    output_padding = stride + 2 * padding - kernel_size
    return nn.ConvTranspose2d(
        in_channels, out_channels, kernel_size, stride=stride, padding=padding,
        output_padding=output_padding, bias=bias,
    )  # fmt: skip


def _conv_fn(transpose: bool) -> Callable:
    return _conv_transpose_2d if transpose else nn.Conv2d


def _shortcut(conv_fn, in_channels, out_channels, stride, bias, bn_ctor, with_bn, opt_args=None):
    """None (the identity) when the shape stays, else a strided 1x1 convolution (+ BN)."""
    if stride == 1 and in_channels == out_channels:
        return None
    conv = conv_fn(in_channels, out_channels, 1, stride, bias=bias)
    nn.init.kaiming_normal_(conv.weight)
    if bias:
        nn.init.zeros_(conv.bias)
    if opt_args is not None:
        conv.weight.opt_args = opt_args
    return nn.Sequential(conv, bn_ctor(out_channels)) if with_bn else conv


class _Residual(nn.Module):
    """``activation(core(x) + shortcut(x))``."""

    def forward(self, x):
        core = self._core_layers(x)
        shortcut = x if self._shortcut_layers is None else self._shortcut_layers(x)
        return self._activation(core + shortcut)


@alf.configurable(
    whitelist=["with_batch_normalization", "bn_ctor", "weight_opt_args", "activation"]
)
class ResidueBlock(_Residual):
    """Two ``kernel_size`` convolutions (the first strided) with a shortcut (module doc).

    Args:
        in_channels: channels of the input.
        channels: channels of both convolutions (and the output).
        kernel_size: an odd kernel size (padding keeps the size).
        stride: the first convolution's stride (and the shortcut's).
        transpose: transposed convolutions (module doc).
        activation: after the first convolution and after the sum (a function or a module).
        with_batch_normalization: batch normalization after each convolution.
        weight_opt_args: optimizer arguments of the convolutions' weights.
        bn_ctor: the batch-normalization module's constructor.
    """

    def __init__(
        self,
        in_channels: int,
        channels: int,
        kernel_size: int,
        stride: int,
        transpose: bool = False,
        activation: Callable = torch.relu_,
        with_batch_normalization: bool = True,
        weight_opt_args: dict | None = None,
        bn_ctor: Callable = nn.BatchNorm2d,
    ):
        super().__init__()
        conv_fn, bias, padding = (
            _conv_fn(transpose),
            not with_batch_normalization,
            (kernel_size - 1) // 2,
        )
        conv1 = conv_fn(in_channels, channels, kernel_size, stride, padding=padding, bias=bias)
        conv2 = conv_fn(channels, channels, kernel_size, padding=padding, bias=bias)
        for conv in (conv1, conv2):
            nn.init.kaiming_normal_(conv.weight)
            if weight_opt_args is not None:
                conv.weight.opt_args = weight_opt_args
        act = activation if isinstance(activation, nn.Module) else Lambda(activation)
        if with_batch_normalization:
            core = [conv1, bn_ctor(channels), act, conv2, bn_ctor(channels)]
        else:
            core = [conv1, act, conv2]
        self._core_layers = nn.Sequential(*core)
        self._shortcut_layers = _shortcut(
            conv_fn, in_channels, channels, stride, bias, bn_ctor, with_batch_normalization,
            weight_opt_args,
        )  # fmt: skip
        self._activation = activation


@alf.configurable(whitelist=["v1_5", "with_batch_normalization", "bn_ctor"])
class BottleneckBlock(_Residual):
    """1x1, ``kernel_size`` and 1x1 convolutions with a shortcut (module doc).

    Args:
        in_channels: channels of the input.
        kernel_size: the middle convolution's (odd) kernel size.
        filters: ``(filters1, filters2, filters3)`` of the three convolutions.
        stride: the block's stride: on the middle convolution (``v1_5``, ResNet v1.5) or on
            the first (the original ResNet).
        transpose: transposed convolutions (module doc).
        v1_5: where the stride goes (above).
        with_batch_normalization: batch normalization after each convolution.
        bn_ctor: the batch-normalization module's constructor.
    """

    def __init__(
        self,
        in_channels: int,
        kernel_size: int,
        filters: tuple[int, int, int],
        stride: int,
        transpose: bool = False,
        v1_5: bool = True,
        with_batch_normalization: bool = True,
        bn_ctor: Callable = nn.BatchNorm2d,
    ):
        super().__init__()
        f1, f2, f3 = filters
        conv_fn, bias, padding = (
            _conv_fn(transpose),
            not with_batch_normalization,
            (kernel_size - 1) // 2,
        )
        first_stride, middle_stride = (1, stride) if v1_5 else (stride, 1)
        a = conv_fn(in_channels, f1, 1, first_stride, bias=bias)
        b = conv_fn(f1, f2, kernel_size, middle_stride, padding, bias=bias)
        c = conv_fn(f2, f3, 1, bias=bias)
        for conv in (a, b, c):
            nn.init.kaiming_normal_(conv.weight)
            if bias:
                nn.init.zeros_(conv.bias)
        relu = nn.ReLU(inplace=True)
        if with_batch_normalization:
            core = [a, bn_ctor(f1), relu, b, bn_ctor(f2), relu, c, bn_ctor(f3)]
        else:
            core = [a, relu, b, relu, c]
        self._core_layers = nn.Sequential(*core)
        self._shortcut_layers = _shortcut(
            conv_fn, in_channels, f3, stride, bias, bn_ctor, with_batch_normalization
        )
        self._activation = torch.relu_

    def calc_output_shape(self, input_shape) -> torch.Size:
        """The output shape (without the batch) for an input of shape ``input_shape``."""
        with torch.no_grad():
            return self.forward(torch.zeros(1, *input_shape)).shape[1:]
