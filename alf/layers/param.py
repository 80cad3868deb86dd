"""Layers whose weights are given, not owned (the layers of a hypernetwork's generated
networks): ``ParamFC`` and ``ParamConv2D``, with ALF's arguments.

``set_parameters(theta)`` hands a layer ``n`` sets of parameters at once, ``theta`` of shape
``[n, param_length]`` (or ``[param_length]`` for one): each row is the weight flattened
(``[out, in]`` or ``[C', C, kh, kw]``) followed by the bias. The layer computes with
``theta`` itself (views and reshapes of it), so gradients of its outputs reach whatever
produced ``theta``; with ``n > 1`` it computes the ``n`` layers at once, replica ``i`` with
row ``i``. A new layer holds one set
drawn from a standard normal. ``reinitialize=True`` overwrites ``theta``'s rows in place with
the layer's initialization (``variance_scaling_init`` with the activation's gain, or
``kernel_initializer``; the bias ``bias_init_value``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

import alf
from alf.layers.dense import init_weight, replicated_linear


class _ParamLayer(nn.Module):
    """What both layers share: the lengths, the split of ``theta`` and its initialization."""

    def _setup(self, name, weight_shape, out, activation, use_bias, use_ln, init_args):
        if use_ln:
            raise ValueError(f"{name}: use_ln=True is not supported (no parameterized norm)")
        self._name, self._weight_shape, self._activation = name, weight_shape, activation
        self._use_bias = use_bias
        self._kernel_initializer, self._kernel_init_gain, self._bias_init_value = init_args
        self._weight_length = math.prod(weight_shape)
        self._bias_length = out if use_bias else 0
        self._weight = self._bias = None
        self._n_groups = 1
        self.set_parameters(torch.randn(1, self.param_length))

    @property
    def weight(self) -> torch.Tensor:
        """The weights given, as the layer uses them (see the subclass)."""
        return self._weight

    @property
    def bias(self) -> torch.Tensor | None:
        """The biases given; None without a bias."""
        return self._bias

    @property
    def weight_length(self) -> int:
        """Numbers in one weight."""
        return self._weight_length

    @property
    def bias_length(self) -> int:
        """Numbers in one bias (0 without a bias)."""
        return self._bias_length

    @property
    def param_length(self) -> int:
        """Numbers in one set of parameters: a row of ``theta``."""
        return self._weight_length + self._bias_length

    @property
    def n_groups(self) -> int:
        """Number of parameter sets last given."""
        return self._n_groups

    def set_parameters(self, theta: torch.Tensor, reinitialize: bool = False) -> None:
        """Use ``theta`` (``[n, param_length]`` or ``[param_length]``) as ``n`` sets of
        parameters (module doc)."""
        if theta.ndim == 1:
            theta = theta.unsqueeze(0)
        if theta.ndim != 2 or theta.shape[1] != self.param_length:
            raise ValueError(
                f"{self._name}: theta of shape {tuple(theta.shape)}, expected "
                f"[n, {self.param_length}] or [{self.param_length}]"
            )
        n = theta.shape[0]
        weights = theta[:, : self._weight_length].view(n, *self._weight_shape)
        biases = theta[:, self._weight_length :] if self._use_bias else None
        if reinitialize:
            with torch.no_grad():
                for w in weights:
                    init_weight(
                        w, self._kernel_initializer, False, self._kernel_init_gain,
                        self._activation,
                    )  # fmt: skip
                if biases is not None:
                    biases.fill_(self._bias_init_value)
        self._n_groups = n
        self._store(weights, biases)


@alf.configurable
@alf.repr_wrapper
class ParamFC(_ParamLayer):
    """``n`` fully connected layers with given parameters (module doc).

    ``weight`` is ``[n, output_size, input_size]``, ``bias`` ``[n, output_size]``. The
    input is ``[B, input_size]`` (read by every replica) or ``[B, n, input_size]``; the
    output ``[B, n, output_size]``, or ``[B, output_size]`` when ``n`` is 1.

    Args:
        input_size, output_size: sizes of the input's and the output's last dimension.
        activation: applied last (``torch.relu_`` by default).
        use_bias: whether a set of parameters has a bias.
        use_ln: refused (ALF's parameterized layer norm is not here).
        n_groups: ALF fixes it with ``use_ln``; otherwise ``set_parameters`` sets it.
        kernel_initializer, kernel_init_gain, bias_init_value: the initialization that
            ``set_parameters(theta, reinitialize=True)`` writes.
    """

    def __init__(
        self,
        input_size: int,
        output_size: int,
        activation: Callable = torch.relu_,
        use_bias: bool = True,
        use_ln: bool = False,
        n_groups: int | None = None,
        kernel_initializer: Callable | None = None,
        kernel_init_gain: float = 1.0,
        bias_init_value: float = 0.0,
    ):
        super().__init__()
        self._input_size, self._output_size = input_size, output_size
        self._setup(
            "ParamFC", (output_size, input_size), output_size, activation, use_bias, use_ln,
            (kernel_initializer, kernel_init_gain, bias_init_value),
        )  # fmt: skip

    def _store(self, weights, biases) -> None:
        self._weight, self._bias = weights, biases

    def forward(self, inputs):
        y = replicated_linear(inputs, self._weight, self._bias, "ParamFC")
        return self._activation(y.squeeze(1) if self._n_groups == 1 else y)


@alf.configurable
@alf.repr_wrapper
class ParamConv2D(_ParamLayer):
    """``n`` 2-D convolutions with given parameters, as one grouped convolution (module doc).

    ``weight`` is ``[C', C, kh, kw]`` for one set and ``[n * C', C, kh, kw]`` (the sets one
    after the other) for more, ``bias`` ``[n * C']``. The input is ``[B, C, H, W]`` (read by
    every replica), ``[B, n * C, H, W]`` or ``[B, n, C, H, W]``; ``forward`` gives
    ``[B, C', H', W']`` for one set, else ``[B, n, C', H', W']`` (``[B, n * C', H', W']``
    with ``keep_group_dim=False``).

    Args:
        in_channels, out_channels: channels of the input and the output.
        kernel_size, strides, padding: as ``torch.nn.functional.conv2d``'s (int or pair).
        activation: after the convolution (``torch.relu_`` by default).
        pooling_kernel: a max pooling of this kernel after the activation; None: none.
        use_bias: whether a set of parameters has a bias.
        use_ln: refused (ALF's parameterized layer norm is not here).
        n_groups: ALF fixes it with ``use_ln``; otherwise ``set_parameters`` sets it.
        kernel_initializer, kernel_init_gain, bias_init_value: the initialization that
            ``set_parameters(theta, reinitialize=True)`` writes.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        activation: Callable = torch.relu_,
        strides=1,
        pooling_kernel=None,
        padding=0,
        use_bias: bool = False,
        use_ln: bool = False,
        n_groups: int | None = None,
        kernel_initializer: Callable | None = None,
        kernel_init_gain: float = 1.0,
        bias_init_value: float = 0.0,
    ):
        super().__init__()
        kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
        self._in_channels, self._out_channels = in_channels, out_channels
        self._strides, self._padding, self._pooling_kernel = strides, padding, pooling_kernel
        self._setup(
            "ParamConv2D", (out_channels, in_channels, kh, kw), out_channels, activation,
            use_bias, use_ln, (kernel_initializer, kernel_init_gain, bias_init_value),
        )  # fmt: skip

    def _store(self, weights, biases) -> None:
        self._weight = weights.reshape(-1, *weights.shape[2:])  # [n * C', C, kh, kw]
        self._bias = None if biases is None else biases.reshape(-1)

    def _grouped_input(self, img):
        """``[B, n * C, H, W]`` from any of the accepted inputs."""
        n, c = self._n_groups, self._in_channels
        if img.ndim == 4 and img.shape[1] == c:
            return img if n == 1 else img.repeat(1, n, 1, 1)
        if img.ndim == 4 and img.shape[1] == n * c:
            return img
        if img.ndim == 5 and img.shape[1:3] == (n, c):
            return img.reshape(img.shape[0], n * c, *img.shape[3:])
        raise ValueError(
            f"ParamConv2D: input of shape {tuple(img.shape)}, expected [B, {c}, H, W], "
            f"[B, {n * c}, H, W] or [B, {n}, {c}, H, W]"
        )

    def forward(self, img, keep_group_dim: bool = True):
        y = F.conv2d(
            self._grouped_input(img), self._weight, self._bias, stride=self._strides,
            padding=self._padding, groups=self._n_groups,
        )  # fmt: skip
        y = self._activation(y)
        if self._pooling_kernel is not None:
            y = F.max_pool2d(y, self._pooling_kernel)
        if self._n_groups > 1 and keep_group_dim:
            y = y.view(y.shape[0], self._n_groups, self._out_channels, *y.shape[2:])
        return y
