"""What the projection networks share: their output layers and the action bounds.

``output_head`` builds one output layer of a projection network, as ALF's projection
networks build theirs:

- by default an ``nn.Linear`` whose weight is variance-scaled with the gain of the
  activation that follows times ``gain``, and whose bias is ``bias_value`` (called through
  ``LinearOp``: the hot path of every actor's forward);
- with ``fc_ctor`` (e.g. ``alf.layers.FC`` or a noisy layer), that layer, given ALF's
  arguments (``kernel_init_gain``, ``weight_opt_args``, ``bias_opt_args``, ...);
- with ``parallelism=n``, an ``alf.layers.ParallelFC`` of ``n`` replicas: a ``[B, N]``
  input gives a ``[B, n, output_size]`` output.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn as nn

from alf.initializers import variance_scaling_init
from alf.layers.dense import ParallelFC
from alf.networks.network import LinearOp
from alf.tensor_specs import BoundedTensorSpec
from alf.utils import math_ops, mixed_precision


class OutputHead:
    """``activation(layer(x))``, with ``layer`` an ``nn.Module`` the owning network registers;
    in float32 during a mixed-precision update (``mixed_precision.autocast_device``).

    Args:
        layer: the layer.
        activation: applied after ``layer`` (None when the layer applies its own).
    """

    __slots__ = ("layer", "_call", "_activation")

    def __init__(self, layer: nn.Module, activation: Callable | None = None):
        self.layer = layer
        self._call = LinearOp(layer) if type(layer) is nn.Linear else layer
        self._activation = activation

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        device = mixed_precision.autocast_device()
        if device is not None:  # a mixed-precision update: this layer in float32
            with torch.autocast(device, enabled=False):
                return self._forward(x.float())
        return self._forward(x)

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self._call(x)
        return y if self._activation is None else self._activation(y)


def _set_opt_args(layer: nn.Module, weight_opt_args, bias_opt_args) -> None:
    if weight_opt_args:
        layer.weight.opt_args = weight_opt_args
    if bias_opt_args and layer.bias is not None:
        layer.bias.opt_args = bias_opt_args


def output_head(
    input_size: int,
    output_size: int,
    gain: float,
    activation: Callable = math_ops.identity,
    bias_value: float = 0.0,
    kernel_initializer: Callable | None = None,
    fc_ctor: Callable | None = None,
    parallelism: int | None = None,
    weight_opt_args: dict | None = None,
    bias_opt_args: dict | None = None,
) -> OutputHead:
    """One output layer of a projection network (module doc).

    Args:
        input_size: size of the input's last dim.
        output_size: number of outputs (per replica).
        gain: extra gain of the weight's variance-scaling initialization.
        activation: applied to the output; also sets the initialization's gain.
        bias_value: the bias's initial value.
        kernel_initializer: ``init(weight)`` in place of the variance scaling.
        fc_ctor: ALF's layer constructor, called as ``fc_ctor(input_size, output_size,
            kernel_init_gain=gain, ...)``; None: an ``nn.Linear`` initialized the same way.
        parallelism: ``n`` replicas as one ``ParallelFC`` (not with ``fc_ctor``).
        weight_opt_args: optimizer arguments of the weight (set as ``weight.opt_args``).
        bias_opt_args: optimizer arguments of the bias.
    """
    if activation is None:
        activation = math_ops.identity
    kwargs = {"kernel_init_gain": gain}
    if activation is not math_ops.identity:
        kwargs["activation"] = activation
    if bias_value != 0.0:
        kwargs["bias_init_value"] = bias_value
    if kernel_initializer is not None:
        kwargs["kernel_initializer"] = kernel_initializer
    if weight_opt_args or bias_opt_args:
        kwargs.update(weight_opt_args=weight_opt_args, bias_opt_args=bias_opt_args)
    if parallelism is not None:
        return OutputHead(ParallelFC(input_size, output_size, parallelism, **kwargs))
    if fc_ctor is not None:
        return OutputHead(fc_ctor(input_size, output_size, **kwargs))
    layer = nn.Linear(input_size, output_size)
    if kernel_initializer is None:
        variance_scaling_init(layer.weight.data, gain=gain, nonlinearity=activation)
    else:
        kernel_initializer(layer.weight.data)
    nn.init.constant_(layer.bias.data, bias_value)
    _set_opt_args(layer, weight_opt_args, bias_opt_args)
    return OutputHead(layer, None if activation is math_ops.identity else activation)


def check_parallelism(name: str, parallelism: int | None, action_spec) -> None:
    """A one-line ValueError unless ``parallelism`` is None or a positive int with a 1-D spec."""
    if parallelism is None:
        return
    if not isinstance(parallelism, int) or parallelism < 1:
        raise ValueError(f"{name}: parallelism must be a positive int or None, got {parallelism}")
    if action_spec.ndim != 1:
        raise ValueError(f"{name}: parallelism needs a 1-D action spec, got {action_spec}")


def action_bounds(name: str, action_spec, why: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The spec's finite ``(minimum, maximum)`` as float32 tensors of the action shape.

    Args:
        name: the network's name, for the error.
        action_spec: the action spec.
        why: the option that needs the bounds, for the error.

    Raises:
        ValueError: if the spec is not bounded or a bound is infinite.
    """
    if not isinstance(action_spec, BoundedTensorSpec):
        raise ValueError(f"{name}: {why} needs a bounded action spec, got {action_spec}")
    shape = tuple(action_spec.shape)
    low = np.broadcast_to(action_spec.minimum, shape).astype(np.float64)
    high = np.broadcast_to(action_spec.maximum, shape).astype(np.float64)
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise ValueError(f"{name}: {why} needs finite action bounds, got {action_spec}")
    return (
        torch.as_tensor(low, dtype=torch.float32),
        torch.as_tensor(high, dtype=torch.float32),
    )
