"""``EncodingNetwork``: optional per-input preprocessors, a combiner, conv layers and an MLP.

The forward pass of the common case (one flat float input) is a tight loop over
prebuilt layer callables: no nest walks, no spec checks, no ``nn.Sequential``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import torch.nn as nn

import alf
import alf.nest as nest
from alf.configuration.argtypes import Count
from alf.initializers import variance_scaling_init
from alf.nest.utils import NestConcat
from alf.networks.network import LinearOp, Network
from alf.tensor_specs import TensorSpec, zeros_from_spec
from alf.utils import math_ops


def _activation_ops(activation) -> list:
    """``[activation]``, or ``[]`` for identity / None (no call on the hot path)."""
    if activation is None or activation is math_ops.identity:
        return []
    return [activation]


def _flatten_batch(x):
    return x.reshape(x.shape[0], -1)


def _apply_preprocessors(preprocessors, inputs):
    """Apply a nest of preprocessors (None leaves: keep the input) to the matching inputs."""
    if preprocessors is None:
        return inputs
    if isinstance(preprocessors, dict):
        return type(inputs)(
            {k: _apply_preprocessors(preprocessors.get(k), v) for k, v in inputs.items()}
        )
    if nest.is_namedtuple(inputs):
        return type(inputs)(*(_apply_preprocessors(p, x) for p, x in zip(preprocessors, inputs)))
    if isinstance(preprocessors, (list, tuple)):
        return type(inputs)(_apply_preprocessors(p, x) for p, x in zip(preprocessors, inputs))
    if isinstance(preprocessors, Network):
        return preprocessors(inputs)[0]
    return preprocessors(inputs)


def _preprocessor_modules(preprocessors) -> list:
    """The ``nn.Module`` leaves of a nest of preprocessors (which may hold None)."""
    if isinstance(preprocessors, nn.Module):
        return [preprocessors]
    if isinstance(preprocessors, dict):
        preprocessors = [preprocessors[k] for k in sorted(preprocessors)]
    if isinstance(preprocessors, (list, tuple)):
        return [m for p in preprocessors for m in _preprocessor_modules(p)]
    return []


def _init_layer(layer, kernel_initializer, activation, bias_init_value=0.0):
    if kernel_initializer is None:
        variance_scaling_init(layer.weight.data, nonlinearity=activation)
    else:
        kernel_initializer(layer.weight.data)
    if layer.bias is not None:
        nn.init.constant_(layer.bias.data, bias_init_value)


@alf.configurable
class EncodingNetwork(Network):
    """Preprocess, combine, convolve and feed forward: ``[B, ...]`` nest → ``[B, N]``.

    1. ``input_preprocessors`` (a nest like ``input_tensor_spec``, leaves may be
       None) transform each input; a nested result is combined into one tensor by
       ``preprocessing_combiner`` (``NestConcat()`` by default).
    2. ``conv_layer_params`` apply 2-D convolutions to a ``[B, C, H, W]`` tensor,
       then flatten.
    3. ``fc_layer_params`` and then ``last_layer_size`` apply fully-connected
       layers. Hidden layers use ``activation``; the optional last layer uses
       ``last_activation`` (identity when None).

    Non-float inputs are cast to float32. Weights default to
    ``variance_scaling_init`` with the gain of the following activation, biases to 0.

    Args:
        input_tensor_spec: nest of ``TensorSpec`` of one input.
        input_preprocessors: nest of callables / networks / None, same structure
            as ``input_tensor_spec`` (or one callable for a flat input).
        preprocessing_combiner: callable combining the preprocessed nest into one
            tensor, with ``output_spec(spec)``; ``NestConcat()`` if None.
        conv_layer_params: tuple of ``(filters, kernel_size, strides[, padding])``.
        fc_layer_params: tuple of hidden FC layer sizes.
        activation: activation of conv and hidden FC layers (``torch.relu_`` is
            in place, which is safe right after a layer).
        kernel_initializer: ``init(weight)`` for conv and hidden FC weights.
        last_layer_size: size of an extra final FC layer, if any.
        last_activation: activation of that last layer (identity if None).
        last_kernel_initializer: ``init(weight)`` of the last layer.
        last_use_bias: whether the last layer has a bias.
        use_fc_bn: batch normalization after each hidden FC layer (before the activation).
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec,
        input_preprocessors=None,
        preprocessing_combiner=None,
        conv_layer_params: tuple[tuple, ...] | None = None,
        fc_layer_params: tuple[int, ...] | None = None,
        activation: Callable | None = torch.relu_,
        kernel_initializer: Callable | None = None,
        last_layer_size: Count | None = None,
        last_activation: Callable | None = None,
        last_kernel_initializer: Callable | None = None,
        last_use_bias: bool = True,
        use_fc_bn: bool = False,
        name: str = "EncodingNetwork",
    ):
        super().__init__(input_tensor_spec, name=name)
        self._build_preprocessing(input_preprocessors, preprocessing_combiner)
        ops, size = self._build_conv_layers(conv_layer_params, activation, kernel_initializer)
        self._fc_layers = nn.ModuleList()
        for layer_size in fc_layer_params or ():
            ops += self._add_fc(size, layer_size, activation, kernel_initializer, use_fc_bn)
            size = layer_size
        if last_layer_size is not None:
            ops += self._add_fc(
                size,
                last_layer_size,
                last_activation,
                last_kernel_initializer,
                False,
                last_use_bias,
            )
            size = last_layer_size
        # The forward pass is `for op in self._ops: z = op(z)`. The modules are also
        # registered in ModuleLists (parameters, state_dict, .to()).
        self._ops = tuple(ops)
        self._output_size = size

    # -- construction ------------------------------------------------------

    def _build_preprocessing(self, input_preprocessors, preprocessing_combiner):
        """Set up preprocessors and combiner; ``self._processed_spec`` is what the layers see."""
        spec = self._input_tensor_spec
        self._preprocessors = nn.ModuleList()
        if input_preprocessors is not None:
            self._preprocessors.extend(_preprocessor_modules(input_preprocessors))
            spec = self._preprocessed_spec(input_preprocessors, spec)
        combiner = None
        if nest.is_nested(spec):
            combiner = preprocessing_combiner or NestConcat()
            if hasattr(combiner, "output_spec"):
                spec = combiner.output_spec(spec)
            else:
                spec = self._dry_run_spec(combiner, spec)
        elif preprocessing_combiner is not None:
            raise ValueError(
                f"{self._name}: preprocessing_combiner is given but the (preprocessed) input "
                f"is a single tensor of spec {spec}; remove the combiner."
            )
        cast = not spec.dtype.is_floating_point
        self._processed_spec = TensorSpec(spec.shape, torch.float32) if cast else spec
        self._input_preprocessors = input_preprocessors
        self._combiner = combiner
        self._cast = cast
        self._needs_preprocess = input_preprocessors is not None or combiner is not None or cast

    def _preprocessed_spec(self, input_preprocessors, spec):
        try:
            return self._dry_run_spec(
                functools.partial(_apply_preprocessors, input_preprocessors), spec
            )
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            raise ValueError(
                f"{self._name}: input_preprocessors {input_preprocessors} do not apply to inputs "
                f"of spec {spec} (the nests must match; None keeps an input): {e}"
            ) from e

    def _dry_run_spec(self, fn, spec) -> TensorSpec:
        """The spec of ``fn(zeros)``, run without gradient and with the preprocessors in
        eval mode (so that e.g. batch norm statistics are not touched)."""
        modes = [(m, m.training) for m in self._preprocessors.modules()]
        self._preprocessors.eval()
        try:
            with torch.no_grad():
                out = fn(zeros_from_spec(spec, batch_size=1))
        finally:
            for module, training in modes:
                module.training = training
        return nest.map_structure(lambda x: TensorSpec.from_tensor(x, from_dim=1), out)

    def _build_conv_layers(self, conv_layer_params, activation, kernel_initializer):
        spec = self._processed_spec
        if not conv_layer_params:
            if spec.ndim != 1:
                raise ValueError(
                    f"{self._name}: without conv_layer_params the input must be a vector, got "
                    f"shape {tuple(spec.shape)}. Give conv_layer_params for [C, H, W] images "
                    "or an input preprocessor that flattens the input."
                )
            return [], spec.shape[0]
        if spec.ndim != 3:
            raise ValueError(
                f"{self._name}: conv_layer_params need a [C, H, W] input, got shape "
                f"{tuple(spec.shape)}."
            )
        self._conv_layers = nn.ModuleList()
        ops = []
        channels = spec.shape[0]
        for params in conv_layer_params:
            filters, kernel_size, strides = params[:3]
            padding = params[3] if len(params) > 3 else 0
            conv = nn.Conv2d(channels, filters, kernel_size, strides, padding)
            _init_layer(conv, kernel_initializer, activation)
            self._conv_layers.append(conv)
            ops += [conv, *_activation_ops(activation)]
            channels = filters
        ops.append(_flatten_batch)
        with torch.no_grad():
            size = nn.Sequential(*self._conv_layers)(torch.zeros(1, *spec.shape)).numel()
        return ops, size

    def _add_fc(self, size, out_size, activation, initializer, use_bn, use_bias=True) -> list:
        """Create (and register) one FC layer; return its forward ops."""
        linear = nn.Linear(size, out_size, bias=use_bias and not use_bn)
        _init_layer(linear, initializer, activation)
        self._fc_layers.append(linear)
        ops = [LinearOp(linear)]
        if use_bn:
            bn = nn.BatchNorm1d(out_size)
            self._fc_layers.append(bn)
            ops.append(bn)
        return ops + _activation_ops(activation)

    # -- forward -----------------------------------------------------------

    def _preprocess_inputs(self, inputs):
        if self._input_preprocessors is not None:
            inputs = _apply_preprocessors(self._input_preprocessors, inputs)
        if self._combiner is not None:
            inputs = self._combiner(inputs)
        if self._cast:
            inputs = inputs.float()
        return inputs

    def forward(self, inputs, state=()):
        """Encode ``inputs`` (``[B, ...]`` nest) into ``([B, output_size], state)``."""
        z = self._preprocess_inputs(inputs) if self._needs_preprocess else inputs
        for op in self._ops:
            z = op(z)
        return z, state

    @property
    def output_spec(self) -> TensorSpec:
        if self._output_spec is None:
            self._output_spec = TensorSpec((self._output_size,), torch.float32)
        return self._output_spec

    @property
    def output_size(self) -> int:
        return self._output_size
