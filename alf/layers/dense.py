"""Fully connected layers: ``FC`` and ``ParallelFC`` (``n`` independent ``FC``s computed as one
batched product), with ALF's arguments.

A layer owns its activation and the initialization that depends on it: by default the
weight is ``variance_scaling_init`` with the gain of the activation that follows
(``kernel_init_gain`` times it), the bias ``bias_init_value``; ``use_torch_init`` gives
``torch.nn.Linear``'s initialization instead. ``use_bn`` (the bias is then dropped: the
normalization removes it) and ``use_ln`` normalize the pre-activation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

import alf
from alf.initializers import variance_scaling_init
from alf.utils.math_ops import identity


def init_weight(weight, kernel_initializer, use_torch_init, gain, activation) -> None:
    """Initialize one weight (of one replica) in place, as the module doc says."""
    if kernel_initializer is not None:
        kernel_initializer(weight)
    elif use_torch_init:
        nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
    else:
        variance_scaling_init(weight, gain=gain, nonlinearity=activation)


def torch_bias_bound(weight) -> float:
    """The bound of torch's default uniform bias initialization for this weight."""
    fan_in = nn.init._calculate_fan_in_and_fan_out(weight)[0]
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0


def init_bias(bias, weight, bias_initializer, use_torch_init, bias_init_value) -> None:
    """Initialize one bias (of one replica) in place: ``bias_initializer``, else torch's
    uniform with ``use_torch_init`` and a zero ``bias_init_value``, else the constant."""
    if bias_initializer is not None:
        bias_initializer(bias)
    elif use_torch_init and bias_init_value == 0.0:
        bound = torch_bias_bound(weight)
        nn.init.uniform_(bias, -bound, bound)
    else:
        nn.init.constant_(bias, bias_init_value)


def _set_opt_args(weight, bias, weight_opt_args, bias_opt_args) -> None:
    """Per-parameter optimizer arguments, read by alf's optimizers (ALF's ``opt_args``)."""
    if weight_opt_args:
        weight.opt_args = weight_opt_args
    if bias_opt_args and bias is not None:
        bias.opt_args = bias_opt_args


def batched_affine(bias: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``torch.baddbmm(bias, x, weight)``: ``x`` ``[R, B, K]``, ``weight`` ``[R, K, M]``,
    ``bias`` ``[R, 1, M]``.

    With one output column (``M = 1``: a critic's value) ``baddbmm`` and its backward
    products run as matrix-vector products with a transposed operand, 10-40 times slower
    than the same sums laid out the other way (3.4 ms instead of 0.09 for the weight's
    gradient of a 1024-wide CrossQ critic on 512 rows); ``_OneColumn`` lays them out so.
    """
    if weight.shape[-1] == 1 and bias.shape == (weight.shape[0], 1, 1):
        return _OneColumn.apply(x, weight, bias)
    return torch.baddbmm(bias, x, weight)


class _OneColumn(torch.autograd.Function):
    """``y = x w + b`` for ``w`` ``[R, K, 1]``: ``y^T = b + w^T x^T`` forward, then
    ``dx = dy w^T`` as a broadcast product, ``dw = (dy^T x)^T``, ``db = Σ_B dy``."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return torch.baddbmm(bias, weight.transpose(1, 2), x.transpose(1, 2)).transpose(1, 2)

    @staticmethod
    def backward(ctx, dy):
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        grad_x = dy * weight.transpose(1, 2) if need_x else None
        grad_w = torch.bmm(dy.transpose(1, 2), x).transpose(1, 2) if need_w else None
        grad_b = dy.sum(1, keepdim=True) if need_b else None
        return grad_x, grad_w, grad_b


def replicated_linear(x, weight, bias, name: str) -> torch.Tensor:
    """``n`` linear maps at once: ``weight`` ``[n, out, in]``, ``bias`` ``[n, out]`` or None,
    on ``[B, in]`` (read by every replica) or ``[B, n, in]``; gives ``[B, n, out]``."""
    n, _, size = weight.shape
    if x.ndim == 2 and x.shape[1] == size:
        x = x.unsqueeze(0).expand(n, *x.shape)  # [n, B, in]
    elif x.ndim == 3 and x.shape[1:] == (n, size):
        x = x.transpose(0, 1)
    else:
        raise ValueError(
            f"{name}: input of shape {tuple(x.shape)}, expected [B, {n}, {size}] or [B, {size}]"
        )
    if bias is not None:
        y = batched_affine(bias.unsqueeze(1), x, weight.transpose(1, 2))
    else:
        y = torch.bmm(x, weight.transpose(1, 2))
    return y.transpose(0, 1)


class _Dense(nn.Module):
    """What ``FC`` and ``ParallelFC`` share: ``n`` replicas' weights ``[*lead, out, in]`` and
    biases (``lead`` is ``()`` for ``FC``, ``(n,)`` for ``ParallelFC``), the normalizations,
    the properties and the per-replica initialization."""

    def _build(self, args: dict, lead: tuple, ln: Callable) -> None:
        self._args = args
        self._input_size, self._output_size = args["input_size"], args["output_size"]
        self._activation = args["activation"]
        self._use_bias = args["use_bias"] and not args["use_bn"]
        out, width = self._output_size, math.prod(lead) * self._output_size
        self._weight = nn.Parameter(torch.empty(*lead, out, self._input_size))
        self._bias = nn.Parameter(torch.empty(*lead, out)) if self._use_bias else None
        self._bn = args["bn_ctor"](width) if args["use_bn"] else None
        self._ln = ln(width) if args["use_ln"] else None
        self.reset_parameters()
        _set_opt_args(self._weight, self._bias, args["weight_opt_args"], args["bias_opt_args"])

    @property
    def input_size(self) -> int:
        return self._input_size

    @property
    def output_size(self) -> int:
        return self._output_size

    @property
    def weight(self) -> nn.Parameter:
        """``[output_size, input_size]`` (``ParallelFC``: ``[n, ...]``)."""
        return self._weight

    @property
    def bias(self) -> nn.Parameter | None:
        """``[output_size]`` (``ParallelFC``: ``[n, ...]``); None without a bias."""
        return self._bias

    def reset_parameters(self) -> None:
        """Initialize every parameter again, each replica as an ``FC`` (module doc)."""
        a = self._args
        gain, torch_init = a["kernel_init_gain"], a["use_torch_init"]
        weights = self._weight.view(-1, *self._weight.shape[-2:])
        biases = None if self._bias is None else self._bias.view(-1, self._output_size)
        with torch.no_grad():
            for i, w in enumerate(weights):
                init_weight(w, a["kernel_initializer"], torch_init, gain, self._activation)
                if biases is not None:
                    init_bias(biases[i], w, a["bias_initializer"], torch_init, a["bias_init_value"])
        for norm in (self._ln, self._bn):
            if norm is not None:
                norm.reset_parameters()


def _ctor_args(local_vars: dict) -> dict:
    args = dict(local_vars)
    del args["self"], args["__class__"]
    return args


@alf.configurable
@alf.repr_wrapper
class FC(_Dense):
    """``activation(norm(x W^T + b))`` on ``[B, ..., input_size]``.

    Args:
        input_size: size of the last input dimension.
        output_size: size of the output's last dimension.
        activation: applied last (identity by default).
        use_bias: whether there is a bias (never with ``use_bn``).
        use_bn: batch normalization (``bn_ctor(output_size)``) before the activation.
        use_ln: layer normalization before the activation (with a shift only where the
            layer has a bias).
        bn_ctor: the batch-normalization module's constructor.
        kernel_initializer: ``init(weight)``; None: see the module doc.
        kernel_init_gain: extra gain of the default initialization.
        bias_init_value: the bias's initial value.
        bias_initializer: ``init(bias)``, over ``bias_init_value``.
        use_torch_init: ``torch.nn.Linear``'s initialization where no initializer is given.
        weight_opt_args: optimizer arguments of the weight (e.g. ``dict(lr_scale=0.1)``).
        bias_opt_args: optimizer arguments of the bias.
    """

    def __init__(
        self,
        input_size: int,
        output_size: int,
        activation: Callable = identity,
        use_bias: bool = True,
        use_bn: bool = False,
        use_ln: bool = False,
        bn_ctor: Callable = nn.BatchNorm1d,
        kernel_initializer: Callable | None = None,
        kernel_init_gain: float = 1.0,
        bias_init_value: float = 0.0,
        bias_initializer: Callable | None = None,
        use_torch_init: bool = False,
        weight_opt_args: dict | None = None,
        bias_opt_args: dict | None = None,
    ):
        super().__init__()
        args = _ctor_args(locals())
        # a LayerNorm shifts only where the layer has a bias
        norm = functools.partial(nn.LayerNorm, bias=use_bias and not use_bn)
        self._build(args, (), norm)

    def forward(self, x):
        params = self._parameters  # what self._weight reads, without nn.Module's lookup
        y = F.linear(x, params["_weight"], params.get("_bias"))
        if self._ln is not None:
            y = self._ln(y)
        if self._bn is not None:
            y = self._bn(y)
        return self._activation(y)

    def make_parallel(self, n: int) -> ParallelFC:
        """A ``ParallelFC`` of ``n`` layers like this one (initialized anew)."""
        return ParallelFC(n=n, **self._args)


@alf.configurable
@alf.repr_wrapper
class ParallelFC(_Dense):
    """``n`` independent ``FC`` layers of one shape, as one batched product.

    The input is ``[B, n, input_size]`` (replica ``i`` reads ``x[:, i]``) or
    ``[B, input_size]`` (every replica reads it); the output is ``[B, n, output_size]``.
    ``weight[i]`` and ``bias[i]`` are replica ``i``'s ``FC`` parameters. Arguments as
    ``FC``'s, plus ``n``; layer normalization normalizes each replica on its own.
    """

    def __init__(
        self,
        input_size: int,
        output_size: int,
        n: int,
        activation: Callable = identity,
        use_bias: bool = True,
        use_bn: bool = False,
        use_ln: bool = False,
        bn_ctor: Callable = nn.BatchNorm1d,
        kernel_initializer: Callable | None = None,
        kernel_init_gain: float = 1.0,
        bias_init_value: float = 0.0,
        bias_initializer: Callable | None = None,
        use_torch_init: bool = False,
        weight_opt_args: dict | None = None,
        bias_opt_args: dict | None = None,
    ):
        super().__init__()
        self._n = n
        self._build(_ctor_args(locals()), (n,), functools.partial(nn.GroupNorm, n))
        if self._ln is not None and not self._use_bias:  # no shift, as FC's LayerNorm
            with torch.no_grad():
                self._ln.bias.zero_()
            self._ln.bias.requires_grad_(False)

    def forward(self, x):
        n = self._n
        y = replicated_linear(x, self._weight, self._bias, "ParallelFC")
        for norm in (self._ln, self._bn):
            if norm is not None:
                y = norm(y.reshape(-1, n * self._output_size)).view(-1, n, self._output_size)
        return self._activation(y)

    def make_parallel(self, n: int):
        raise ValueError("ParallelFC.make_parallel: the layer is already parallel")
