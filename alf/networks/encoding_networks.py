"""``EncodingNetwork``: optional per-input preprocessors, a combiner, conv layers and an MLP,
built from ``alf.layers`` (``Conv2D``, ``FC``) with ALF's arguments.

The forward pass of the common case (one flat float input) is a tight loop over
prebuilt layer callables: no nest walks, no spec checks, no ``nn.Sequential``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
import torch.nn as nn

import alf
import alf.nest as nest
from alf.configuration.argtypes import Count
from alf.layers import FC, Conv2D, Reshape
from alf.nest.utils import NestConcat
from alf.networks.containers import Sequential

# ALF's import path of the image networks (built on the containers)
from alf.networks.image_networks import ImageDecodingNetwork, ImageEncodingNetwork  # noqa: F401
from alf.networks.network import FCOp, Network
from alf.tensor_specs import TensorSpec, zeros_from_spec
from alf.utils import math_ops


def _flatten_batch(x):
    return x.reshape(x.shape[0], -1)


class _ReshapeOp:
    """``x`` reshaped to ``[B, *shape]`` (a plain callable: no module call on the hot path)."""

    __slots__ = ("_shape",)

    def __init__(self, shape: tuple):
        self._shape = shape

    def __call__(self, x):
        return x.reshape(x.shape[0], *self._shape)


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


class _InputStage(nn.Module):
    """Preprocess each input, combine the nest into one tensor, cast it to float32."""

    def __init__(self, input_preprocessors, combiner, cast: bool):
        super().__init__()
        self._preprocessors = nn.ModuleList(_preprocessor_modules(input_preprocessors))
        self._input_preprocessors = input_preprocessors
        self._combiner = combiner
        self._cast = cast

    def forward(self, inputs):
        if self._input_preprocessors is not None:
            inputs = _apply_preprocessors(self._input_preprocessors, inputs)
        if self._combiner is not None:
            inputs = self._combiner(inputs)
        return inputs.float() if self._cast else inputs


def _refuse_batch_ensemble(name, use_batch_ensemble, input_with_ensemble_ids) -> None:
    for arg, value in (
        ("use_batch_ensemble", use_batch_ensemble),
        ("input_with_ensemble_ids", input_with_ensemble_ids),
    ):
        if value:
            raise ValueError(
                f"{name}: {arg}={value!r} is not supported: alf has no BatchEnsemble layers"
            )


def _conv_params(name, params) -> tuple:
    """``(filters, kernel_size, strides, padding)`` of one ``conv_layer_params`` entry."""
    if not isinstance(params, (tuple, list)) or not 3 <= len(params) <= 4:
        raise ValueError(
            f"{name}: each conv_layer_params entry is (filters, kernel_size, strides[, padding]),"
            f" got {params!r}"
        )
    return (*params[:3], params[3] if len(params) > 3 else 0)


@alf.configurable
class EncodingNetwork(Network):
    """Preprocess, combine, convolve and feed forward: ``[B, ...]`` nest → ``[B, N]``.

    1. ``input_preprocessors`` (a nest like ``input_tensor_spec``, leaves may be
       None) transform each input; a nested result is combined into one tensor by
       ``preprocessing_combiner`` (``NestConcat()`` by default).
    2. ``conv_layer_params`` apply ``alf.layers.Conv2D`` layers to a ``[B, C, H, W]``
       tensor, then flatten.
    3. ``fc_layer_params`` and then ``last_layer_size`` apply ``alf.layers.FC`` layers.
       Hidden layers use ``activation``; the optional last layer uses
       ``last_activation`` (identity when None). A ``[B, N, D]`` input (e.g. of a
       preprocessor giving ``N`` embeddings) keeps its ``N``: the layers act on ``D``.
    4. With ``output_tensor_spec``, the output is reshaped to ``[B, *its shape]``.

    Non-float inputs are cast to float32. Weights default to ``variance_scaling_init``
    with the gain of the following activation, biases to 0 (ALF's starts convolution biases
    as torch does, uniform in ±1/sqrt(fan_in)).

    ``make_parallel(n)`` gives ``n`` independent copies computed at once (``ParallelFC``,
    ``ParallelConv2D``); preprocessors with parameters run replica by replica.

    Args:
        input_tensor_spec: nest of ``TensorSpec`` of one input.
        output_tensor_spec: the spec the output is reshaped to (its size must be that of
            the last layer); None: ``[N]`` (``[N', N]`` for a ``[N', D]`` input).
        input_preprocessors: nest of callables / networks / None, same structure
            as ``input_tensor_spec`` (or one callable for a flat input).
        input_preprocessors_ctor: ``ctor(input_tensor_spec)`` building
            ``input_preprocessors`` when those are not given.
        preprocessing_combiner: callable combining the preprocessed nest into one
            tensor, with ``output_spec(spec)``; ``NestConcat()`` if None.
        conv_layer_params: tuple of ``(filters, kernel_size, strides[, padding])``.
        fc_layer_params: tuple of hidden FC layer sizes.
        activation: activation of conv and hidden FC layers (``torch.relu_`` is
            in place, which is safe right after a layer).
        kernel_initializer: ``init(weight)`` for conv and hidden FC weights.
        use_fc_bn: batch normalization in each hidden FC layer (before the activation).
        use_fc_ln: layer normalization in each hidden FC layer (before the activation).
        fc_bn_ctor: ``ctor(num_features)`` of the batch normalizations of ``use_fc_bn`` and
            ``last_use_fc_bn``; None: ``torch.nn.BatchNorm1d`` (e.g.
            ``alf.layers.BatchRenorm1d``, CrossQ's).
        fc_bn_after_activation: with ``use_fc_bn``, normalize the first FC layer's input
            and each hidden FC layer's output after its activation, instead of each hidden
            pre-activation: every FC layer, and what reads the network's output, then
            reads a normalized input, as in CrossQ's networks (Bhatt et al. 2024).
        use_batch_ensemble, ensemble_size, input_with_ensemble_ids: ALF's BatchEnsemble
            options; alf has no BatchEnsemble layers, so ``True`` is refused.
        last_layer_size: size of an extra final FC layer, if any.
        last_activation: activation of that last layer (identity if None).
        last_kernel_initializer: ``init(weight)`` of the last layer;
            ``kernel_initializer`` if None.
        last_use_fc_bn: batch normalization in the last layer.
        last_use_fc_ln: layer normalization in the last layer.
        last_use_bias: whether the last layer has a bias.
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec,
        output_tensor_spec: TensorSpec | None = None,
        input_preprocessors=None,
        input_preprocessors_ctor: Callable | None = None,
        preprocessing_combiner=None,
        conv_layer_params: tuple[tuple, ...] | None = None,
        fc_layer_params: tuple[int, ...] | None = None,
        activation: Callable | None = torch.relu_,
        kernel_initializer: Callable | None = None,
        use_fc_bn: bool = False,
        use_fc_ln: bool = False,
        use_batch_ensemble: bool = False,
        ensemble_size: int = 10,
        input_with_ensemble_ids: bool = False,
        last_layer_size: Count | None = None,
        last_activation: Callable | None = None,
        last_kernel_initializer: Callable | None = None,
        last_use_fc_bn: bool = False,
        last_use_fc_ln: bool = False,
        last_use_bias: bool = True,
        fc_bn_ctor: Callable | None = None,
        fc_bn_after_activation: bool = False,
        name: str = "EncodingNetwork",
    ):
        super().__init__(input_tensor_spec, name=name)
        _refuse_batch_ensemble(name, use_batch_ensemble, input_with_ensemble_ids)
        activation = activation or math_ops.identity
        if input_preprocessors is None and input_preprocessors_ctor is not None:
            input_preprocessors = input_preprocessors_ctor(input_tensor_spec)
        self._legacy_names = {}  # this network's state_dict names before alf.layers
        self._build_input_stage(input_preprocessors, preprocessing_combiner)
        ops, shape = self._build_conv_layers(conv_layer_params, activation, kernel_initializer)
        fc = functools.partial(self._add_fc, kernel_initializer=kernel_initializer)
        self._fc_layers = nn.ModuleList()
        self._fc_bn_ctor = fc_bn_ctor or nn.BatchNorm1d
        # fc_bn_after_activation: the normalizations of the inputs and hidden outputs
        self._fc_norms = nn.ModuleList()
        after = use_fc_bn and fc_bn_after_activation
        if after:
            if last_use_fc_bn or last_use_fc_ln:
                raise ValueError(
                    f"{name}: with fc_bn_after_activation the last layer reads a normalized "
                    "input; last_use_fc_bn / last_use_fc_ln do not apply"
                )
            ops.append(self._add_fc_norm(shape))
        for size in fc_layer_params or ():
            ops.append(
                fc(shape[-1], size, activation, use_bn=use_fc_bn and not after, use_ln=use_fc_ln)
            )
            shape = (*shape[:-1], size)
            if after:
                ops.append(self._add_fc_norm(shape))
        if last_layer_size is not None:
            if last_kernel_initializer is not None:
                fc = functools.partial(self._add_fc, kernel_initializer=last_kernel_initializer)
            last = fc(
                shape[-1],
                last_layer_size,
                last_activation or math_ops.identity,
                use_bn=last_use_fc_bn,
                use_ln=last_use_fc_ln,
                use_bias=last_use_bias,
            )
            ops.append(last)
            shape = (*shape[:-1], last_layer_size)
        self._layer_shape = shape
        shape = self._reshape_output(output_tensor_spec, shape, ops)
        # The forward pass is `for op in self._ops: z = op(z)`. The layers are also
        # registered in ModuleLists (parameters, state_dict, .to()).
        self._ops = tuple(ops)
        self._output_shape = shape
        self._register_load_state_dict_pre_hook(self._rename_legacy_entries)

    # -- construction ------------------------------------------------------

    def _build_input_stage(self, input_preprocessors, preprocessing_combiner):
        """Set up preprocessors and combiner; ``self._processed_spec`` is what the layers see."""
        spec = self._input_tensor_spec
        if input_preprocessors is not None:
            stage = _InputStage(input_preprocessors, None, False)
            spec = self._preprocessed_spec(stage, input_preprocessors, spec)
        combiner = None
        if nest.is_nested(spec):
            combiner = preprocessing_combiner or NestConcat()
            if hasattr(combiner, "output_spec"):
                spec = combiner.output_spec(spec)
            else:
                spec = self._dry_run_spec(_InputStage(None, combiner, False), spec)
        elif preprocessing_combiner is not None:
            raise ValueError(
                f"{self._name}: preprocessing_combiner is given but the (preprocessed) input "
                f"is a single tensor of spec {spec}; remove the combiner."
            )
        cast = not spec.dtype.is_floating_point
        self._processed_spec = TensorSpec(spec.shape, torch.float32) if cast else spec
        needed = input_preprocessors is not None or combiner is not None or cast
        self._input_stage = _InputStage(input_preprocessors, combiner, cast) if needed else None
        for i in range(len(self._input_stage._preprocessors) if needed else 0):
            self._legacy_names[f"_preprocessors.{i}."] = f"_input_stage._preprocessors.{i}."

    def _preprocessed_spec(self, stage, input_preprocessors, spec):
        try:
            return self._dry_run_spec(stage, spec)
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            raise ValueError(
                f"{self._name}: input_preprocessors {input_preprocessors} do not apply to inputs "
                f"of spec {spec} (the nests must match; None keeps an input): {e}"
            ) from e

    @staticmethod
    def _dry_run_spec(stage: _InputStage, spec) -> TensorSpec:
        """The spec of ``stage(zeros)``, run without gradient and in eval mode (so that
        e.g. batch norm statistics are not touched)."""
        modes = [(m, m.training) for m in stage.modules()]
        stage.eval()
        try:
            with torch.no_grad():
                out = stage(zeros_from_spec(spec, batch_size=1))
        finally:
            for module, training in modes:
                module.training = training
        return nest.map_structure(lambda x: TensorSpec.from_tensor(x, from_dim=1), out)

    def _build_conv_layers(self, conv_layer_params, activation, kernel_initializer):
        """The conv layers' ops and the shape after them (flattened)."""
        spec = self._processed_spec
        self._conv_layers = nn.ModuleList()
        if not conv_layer_params:
            if spec.ndim not in (1, 2):
                raise ValueError(
                    f"{self._name}: without conv_layer_params the input must be [N] or [N, D],"
                    f" got shape {tuple(spec.shape)}. Give conv_layer_params for [C, H, W] "
                    "images or an input preprocessor that flattens the input."
                )
            return [], tuple(spec.shape)
        if spec.ndim != 3:
            raise ValueError(
                f"{self._name}: conv_layer_params need a [C, H, W] input, got shape "
                f"{tuple(spec.shape)}."
            )
        channels = spec.shape[0]
        for i, params in enumerate(conv_layer_params):
            filters, kernel_size, strides, padding = _conv_params(self._name, params)
            conv = Conv2D(
                channels,
                filters,
                kernel_size,
                activation=activation,
                strides=strides,
                padding=padding,
                kernel_initializer=kernel_initializer,
                bias_initializer=nn.init.zeros_,
            )
            self._conv_layers.append(conv)
            for leaf in ("weight", "bias"):
                self._legacy_names[f"_conv_layers.{i}.{leaf}"] = f"_conv_layers.{i}._conv.{leaf}"
            channels = filters
        with torch.no_grad():
            size = nn.Sequential(*self._conv_layers)(torch.zeros(1, *spec.shape)).numel()
        return [*self._conv_layers, _flatten_batch], (size,)

    def _add_fc_norm(self, shape) -> nn.Module:
        """Create (and register) the ``fc_bn_after_activation`` normalization of a ``[N]``
        input; return it."""
        if len(shape) != 1:
            raise ValueError(
                f"{self._name}: fc_bn_after_activation needs [N] inputs to the FC layers, "
                f"got {shape}"
            )
        norm = self._fc_bn_ctor(shape[0])
        self._fc_norms.append(norm)
        return norm

    def _add_fc(
        self, size, out_size, activation, kernel_initializer, use_bn, use_ln, use_bias=True
    ) -> FCOp:
        """Create (and register) one FC layer; return its forward op."""
        layer = FC(
            size,
            out_size,
            activation=activation,
            use_bias=use_bias,
            use_bn=use_bn,
            use_ln=use_ln,
            bn_ctor=self._fc_bn_ctor,
            kernel_initializer=kernel_initializer,
        )
        index = len(self._fc_layers)
        # before alf.layers, a batch normalization was the next entry of _fc_layers
        old = index + sum(1 for m in self._fc_layers if m._bn is not None)
        self._legacy_names[f"_fc_layers.{old}.weight"] = f"_fc_layers.{index}._weight"
        self._legacy_names[f"_fc_layers.{old}.bias"] = f"_fc_layers.{index}._bias"
        if use_bn:
            for leaf in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
                self._legacy_names[f"_fc_layers.{old + 1}.{leaf}"] = (
                    f"_fc_layers.{index}._bn.{leaf}"
                )
        self._fc_layers.append(layer)
        return FCOp(layer)

    def _reshape_output(self, output_tensor_spec, shape, ops) -> tuple:
        if output_tensor_spec is None:
            return shape
        wanted = tuple(output_tensor_spec.shape)
        if math.prod(wanted) != math.prod(shape):
            raise ValueError(
                f"{self._name}: output_tensor_spec of shape {wanted} does not hold the "
                f"network's output of shape {shape}"
            )
        if wanted != shape:
            ops.append(_ReshapeOp(wanted))
        return wanted

    def _rename_legacy_entries(self, state_dict, prefix, *args) -> None:
        """Load a state_dict saved before the network was built from ``alf.layers``: its
        names (``self._legacy_names``: a whole name, or a prefix ending in a dot) renamed.
        No current name is an old one, so a current state_dict is left as it is."""
        for key in [k for k in state_dict if k.startswith(prefix)]:
            local = key[len(prefix) :]
            new = self._legacy_names.get(local)
            if new is None and local.startswith("_preprocessors."):
                head = ".".join(local.split(".")[:2]) + "."
                if head in self._legacy_names:
                    new = self._legacy_names[head] + local[len(head) :]
            if new is not None:
                state_dict[prefix + new] = state_dict.pop(key)

    # -- forward -----------------------------------------------------------

    def forward(self, inputs, state=()):
        """Encode ``inputs`` (``[B, ...]`` nest) into ``([B, *output_shape], state)``."""
        z = inputs if self._input_stage is None else self._input_stage(inputs)
        for op in self._ops:
            z = op(z)
        return z, state

    @property
    def output_spec(self) -> TensorSpec:
        if self._output_spec is None:
            self._output_spec = TensorSpec(self._output_shape, torch.float32)
        return self._output_spec

    @property
    def output_size(self) -> int:
        """The size of the last dimension of the output before any reshape."""
        return self._layer_shape[-1]

    def make_parallel(self, n: int) -> Network:
        """``n`` independent copies (initialized anew) as one network: ``[B, ...]`` or
        ``[B, n, ...]`` inputs → ``[B, n, *output_shape]``."""
        if len(self._fc_norms):
            raise ValueError(f"{self._name}: no make_parallel with fc_bn_after_activation")
        members = [] if self._input_stage is None else [self._input_stage]
        members += [*self._conv_layers]
        if self._conv_layers:
            members.append(Reshape(-1))
        members += [*self._fc_layers]
        if self._output_shape != self._layer_shape:
            members.append(Reshape(self._output_shape))
        if not members:
            members.append(alf.layers.Identity())
        net = Sequential(*members, input_tensor_spec=self._input_tensor_spec, name=self._name)
        return net.make_parallel(n)
