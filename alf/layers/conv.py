"""2-D convolutions with their activation and initialization, with ALF's arguments:
``Conv2D``, ``ConvTranspose2D`` and their parallel forms (``n`` independent layers computed
as one grouped convolution).

Images are ``[B, C, H, W]``; a parallel layer reads ``[B, n, C, H, W]`` (replica ``i`` reads
``x[:, i]``) or ``[B, C, H, W]`` (every replica reads it) and gives ``[B, n, C', H', W']``.
The weight defaults to ``variance_scaling_init`` with the gain of the activation (times
``kernel_init_gain``). As in ALF, a convolution's bias with ``bias_init_value == 0`` starts
as torch's uniform one and a transposed convolution's as the constant; ``use_bias=None``
means a bias exactly when there is no batch normalization.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

import alf
from alf.initializers import variance_scaling_init
from alf.layers.dense import init_weight, torch_bias_bound


def _pair(x) -> tuple[int, int]:
    return (x, x) if isinstance(x, int) else tuple(x)


def _replicas(x, n: int, channels: int, name: str):
    """``[B, n * C, H, W]`` from ``[B, n, C, H, W]`` or a shared ``[B, C, H, W]``."""
    if x.ndim == 4 and x.shape[1] == channels:
        x = x.unsqueeze(1).expand(x.shape[0], n, *x.shape[1:])
    elif not (x.ndim == 5 and x.shape[1:3] == (n, channels)):
        raise ValueError(
            f"{name}: input of shape {tuple(x.shape)}, expected [B, {n}, {channels}, H, W] or "
            f"[B, {channels}, H, W]"
        )
    return x.reshape(x.shape[0], n * channels, *x.shape[3:])


class _ConvBase(nn.Module):
    """What the four layers share: the torch module ``self._conv``, the normalizations and
    the per-replica initialization (``n`` replicas; 1 for the plain layers)."""

    transposed = False

    def _build(self, args: dict, n: int, conv: nn.Module, out_channels: int, use_bias: bool):
        self._args, self._n, self._conv = args, n, conv
        self._activation = args["activation"]
        self._use_bias = use_bias
        self._out_channels = out_channels
        bn_ctor = args.get("bn_ctor", nn.BatchNorm2d)
        self._bn = bn_ctor(n * out_channels) if args.get("use_bn") else None
        self._ln = nn.GroupNorm(n, n * out_channels) if args.get("use_ln") else None
        self.reset_parameters()
        if args.get("weight_opt_args"):
            self._conv.weight.opt_args = args["weight_opt_args"]

    def _replica_slices(self):
        """Replica ``i``'s rows of the grouped weight: its own output channels (input
        channels for a transposed weight ``[in, out, kh, kw]``)."""
        rows = self._conv.weight.shape[0] // self._n
        return [slice(i * rows, (i + 1) * rows) for i in range(self._n)]

    def reset_parameters(self) -> None:
        """Initialize every parameter again (module doc)."""
        a, weight, bias = self._args, self._conv.weight, self._conv.bias
        gain, torch_init = a["kernel_init_gain"], a.get("use_torch_init", False)
        with torch.no_grad():
            for rows in self._replica_slices():
                w = weight[rows]
                if self.transposed and a["kernel_initializer"] is None and not torch_init:
                    variance_scaling_init(
                        w, gain=gain, nonlinearity=self._activation, transposed=True
                    )
                else:
                    init_weight(w, a["kernel_initializer"], torch_init, gain, self._activation)
            if bias is not None:
                self._reset_bias(bias, weight)
        for norm in (self._ln, self._bn):
            if norm is not None:
                norm.reset_parameters()

    def _reset_bias(self, bias, weight) -> None:
        value, initializer = self._args["bias_init_value"], self._args.get("bias_initializer")
        if initializer is not None:
            for replica in bias.view(self._n, -1):
                initializer(replica)
            return
        if self.transposed or value != 0:
            nn.init.constant_(bias, value)
            return
        per_replica = bias.view(self._n, -1)
        for i, rows in enumerate(self._replica_slices()):
            bound = torch_bias_bound(weight[rows])
            nn.init.uniform_(per_replica[i], -bound, bound)

    def _finish(self, y):
        for norm in (self._ln, self._bn):
            if norm is not None:
                y = norm(y)
        if self._parallel:
            y = y.reshape(y.shape[0], self._n, self._out_channels, *y.shape[2:])
        return self._activation(y)

    @property
    def weight(self) -> torch.Tensor:
        """Conv2D: ``[C', C, kh, kw]``; parallel: ``[n, C', C, kh, kw]`` (transposed
        convolutions: ``C`` and ``C'`` swapped)."""
        w = self._conv.weight
        return w.view(self._n, -1, *w.shape[1:]) if self._parallel else w

    @property
    def bias(self) -> torch.Tensor | None:
        """``[C']`` (parallel: ``[n, C']``), None without a bias."""
        b = self._conv.bias
        return b.view(self._n, -1) if self._parallel and b is not None else b


def _conv_args(args: dict) -> dict:
    args = dict(args)
    del args["self"], args["__class__"]
    return args


@alf.configurable
@alf.repr_wrapper
class Conv2D(_ConvBase):
    """``activation(norm(conv2d(x)))`` on ``[B, C, H, W]``.

    Args:
        in_channels, out_channels: channels of the input and the output.
        kernel_size, strides, padding: as torch's ``nn.Conv2d`` (an int or a pair).
        activation: applied last (``torch.relu_`` by default).
        use_bias: whether there is a bias; None: when ``use_bn`` is off.
        use_bn: batch normalization (``bn_ctor(out_channels)``) before the activation.
        use_ln: layer normalization over the channels and pixels of each sample.
        weight_opt_args: optimizer arguments of the weight.
        bn_ctor: the batch-normalization module's constructor.
        kernel_initializer: ``init(weight)``; None: module doc.
        kernel_init_gain: extra gain of the default initialization.
        bias_init_value: the bias's initial value (0: torch's uniform one).
        use_torch_init: ``torch.nn.Conv2d``'s weight initialization where no initializer
            is given.
        bias_initializer: ``init(bias)`` of each replica, over ``bias_init_value``.
    """

    _parallel = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        activation: Callable = torch.relu_,
        strides=1,
        padding=0,
        use_bias: bool | None = None,
        use_bn: bool = False,
        use_ln: bool = False,
        weight_opt_args: dict | None = None,
        bn_ctor: Callable = nn.BatchNorm2d,
        kernel_initializer: Callable | None = None,
        kernel_init_gain: float = 1.0,
        bias_init_value: float = 0.0,
        use_torch_init: bool = False,
        bias_initializer: Callable | None = None,
    ):
        super().__init__()
        args = _conv_args(locals())
        use_bias = not use_bn if use_bias is None else use_bias
        conv = nn.Conv2d(in_channels, out_channels, kernel_size, strides, padding, bias=use_bias)
        self._build(args, 1, conv, out_channels, use_bias)

    def forward(self, x):
        return self._finish(self._conv(x))

    def make_parallel(self, n: int) -> ParallelConv2D:
        """A ``ParallelConv2D`` of ``n`` layers like this one (initialized anew)."""
        return ParallelConv2D(n=n, **self._args)


@alf.configurable
@alf.repr_wrapper
class ParallelConv2D(_ConvBase):
    """``n`` independent ``Conv2D`` layers of one shape as one grouped convolution (module
    doc for the shapes). Arguments as ``Conv2D``'s, plus ``n``."""

    _parallel = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        n: int,
        activation: Callable = torch.relu_,
        strides=1,
        padding=0,
        use_bias: bool | None = None,
        use_bn: bool = False,
        use_ln: bool = False,
        weight_opt_args: dict | None = None,
        bn_ctor: Callable = nn.BatchNorm2d,
        kernel_initializer: Callable | None = None,
        kernel_init_gain: float = 1.0,
        bias_init_value: float = 0.0,
        use_torch_init: bool = False,
        bias_initializer: Callable | None = None,
    ):
        super().__init__()
        args = _conv_args(locals())
        use_bias = not use_bn if use_bias is None else use_bias
        conv = nn.Conv2d(
            n * in_channels, n * out_channels, kernel_size, strides, padding,
            groups=n, bias=use_bias,
        )  # fmt: skip
        self._in_channels = in_channels
        self._build(args, n, conv, out_channels, use_bias)

    def forward(self, x):
        x = _replicas(x, self._n, self._in_channels, "ParallelConv2D")
        return self._finish(self._conv(x))


@alf.configurable
@alf.repr_wrapper
class ConvTranspose2D(_ConvBase):
    """``activation(bn(conv_transpose2d(x)))`` on ``[B, C, H, W]``: arguments as
    ``Conv2D``'s (no layer normalization, no torch initialization) plus ``output_padding``,
    torch's extra rows and columns on one side of the output."""

    transposed = True
    _parallel = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        activation: Callable = torch.relu_,
        strides=1,
        padding=0,
        output_padding=0,
        use_bias: bool | None = None,
        use_bn: bool = False,
        bn_ctor: Callable = nn.BatchNorm2d,
        kernel_initializer: Callable | None = None,
        kernel_init_gain: float = 1.0,
        bias_init_value: float = 0.0,
    ):
        super().__init__()
        args = _conv_args(locals())
        use_bias = not use_bn if use_bias is None else use_bias
        conv = nn.ConvTranspose2d(
            in_channels, out_channels, kernel_size, strides, padding, output_padding,
            bias=use_bias,
        )  # fmt: skip
        self._build(args, 1, conv, out_channels, use_bias)

    def forward(self, x):
        return self._finish(self._conv(x))

    def make_parallel(self, n: int) -> ParallelConvTranspose2D:
        """A ``ParallelConvTranspose2D`` of ``n`` layers like this one (initialized anew)."""
        return ParallelConvTranspose2D(n=n, **self._args)


@alf.configurable
@alf.repr_wrapper
class ParallelConvTranspose2D(_ConvBase):
    """``n`` independent ``ConvTranspose2D`` layers as one grouped transposed convolution
    (module doc for the shapes). Arguments as ``ConvTranspose2D``'s, plus ``n``."""

    transposed = True
    _parallel = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        n: int,
        activation: Callable = torch.relu_,
        strides=1,
        padding=0,
        output_padding=0,
        use_bias: bool | None = None,
        use_bn: bool = False,
        bn_ctor: Callable = nn.BatchNorm2d,
        kernel_initializer: Callable | None = None,
        kernel_init_gain: float = 1.0,
        bias_init_value: float = 0.0,
    ):
        super().__init__()
        args = _conv_args(locals())
        use_bias = not use_bn if use_bias is None else use_bias
        conv = nn.ConvTranspose2d(
            n * in_channels, n * out_channels, kernel_size, strides, padding, output_padding,
            groups=n, bias=use_bias,
        )  # fmt: skip
        self._in_channels = in_channels
        self._build(args, n, conv, out_channels, use_bias)

    def forward(self, x):
        x = _replicas(x, self._n, self._in_channels, "ParallelConvTranspose2D")
        return self._finish(self._conv(x))
