"""1-D convolutions over time: ``CausalConv1D``, the dilated causal convolution of WaveNet
(van den Oord et al. 2016, "WaveNet: a generative model for raw audio"), with ALF's arguments.

On ``[B, C, L]`` a causal convolution's output at step ``t`` reads the input at steps
``t - (kernel_size - 1 - i) * dilation`` for ``i < kernel_size`` only (zeros before the
start), so nothing of the future; with ``hide_current`` it reads steps ``t - kernel_size``
to ``t - 1``, not even the present (the first layer of a causal stack). The output has
the input's length.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

import alf
from alf.layers.dense import init_weight


@alf.configurable
@alf.repr_wrapper
class CausalConv1D(nn.Module):
    """``activation(bn(causal_conv1d(x)))`` on ``[B, C, L]`` (module doc).

    Args:
        in_channels, out_channels: channels of the input and the output.
        kernel_size: number of taps.
        dilation: steps between two taps.
        hide_current: shift the input one step later so that the output at ``t`` does not
            read step ``t`` (only with ``dilation=1``).
        activation: applied last (``torch.relu_`` by default).
        use_bias: whether there is a bias; None: when ``use_bn`` is off.
        use_bn: batch normalization before the activation.
        kernel_initializer: ``init(weight)``; None: ``variance_scaling_init`` with the gain
            of the activation times ``kernel_init_gain``.
        kernel_init_gain: extra gain of the default initialization.
        bias_init_value: the bias's initial value.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        dilation: int = 1,
        hide_current: bool = False,
        activation: Callable = torch.relu_,
        use_bias: bool | None = None,
        use_bn: bool = False,
        kernel_initializer: Callable | None = None,
        kernel_init_gain: float = 1.0,
        bias_init_value: float = 0.0,
    ):
        super().__init__()
        if hide_current and dilation != 1:
            raise ValueError(f"CausalConv1D: dilation={dilation} with hide_current (needs 1)")
        use_bias = not use_bn if use_bias is None else use_bias
        # (left, right) padding: the past the taps need; hiding the present shifts by one
        if hide_current:
            self._padding = (kernel_size, -1)
        else:
            self._padding = ((kernel_size - 1) * dilation, 0)
        self._conv = nn.Conv1d(
            in_channels, out_channels, kernel_size, dilation=dilation, bias=use_bias
        )
        self._activation = activation
        self._kernel_initializer = kernel_initializer
        self._kernel_init_gain = kernel_init_gain
        self._bias_init_value = bias_init_value
        self._bn = nn.BatchNorm1d(out_channels) if use_bn else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialize every parameter again (class doc)."""
        with torch.no_grad():
            init_weight(
                self._conv.weight, self._kernel_initializer, False, self._kernel_init_gain,
                self._activation,
            )  # fmt: skip
            if self._conv.bias is not None:
                nn.init.constant_(self._conv.bias, self._bias_init_value)
        if self._bn is not None:
            self._bn.reset_parameters()

    @property
    def weight(self) -> nn.Parameter:
        """``[out_channels, in_channels, kernel_size]``."""
        return self._conv.weight

    @property
    def bias(self) -> nn.Parameter | None:
        """``[out_channels]``; None without a bias."""
        return self._conv.bias

    def forward(self, x):
        """``[B, C, L]`` -> ``[B, C', L]``."""
        y = self._conv(F.pad(x, self._padding))
        if self._bn is not None:
            y = self._bn(y)
        return self._activation(y)
