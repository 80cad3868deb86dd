"""Input preprocessing as ALF has it: ``EmbeddingPreprocessor`` (a discrete input to a learned
embedding, a continuous one through an MLP) and ``PreprocessorNetwork`` (a nest of per-input
preprocessors, then a combiner: the front of a network whose observation is a nest, e.g. a
goal env's dict).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

import alf
import alf.nest as nest
from alf.networks.encoding_networks import EncodingNetwork
from alf.networks.network import Network, NetworkWrapper
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import math_ops


@alf.configurable
class EmbeddingPreprocessor(Network):
    """An input as an ``embedding_dim`` vector.

    A discrete input (a ``BoundedTensorSpec`` of integers) indexes a learned
    ``nn.Embedding`` table (row ``value - minimum``); a continuous one goes through an
    ``EncodingNetwork`` (``conv_layer_params``, ``fc_layer_params`` with ``activation``, then
    an ``embedding_dim`` layer with ``last_activation``).

    Args:
        input_tensor_spec: the input's spec (a scalar for a discrete input).
        embedding_dim: size of the output.
        conv_layer_params: ``(filters, kernel_size, strides[, padding])`` of conv layers
            (continuous inputs).
        fc_layer_params: sizes of hidden layers (continuous inputs).
        activation: activation of the hidden layers.
        last_activation: activation of the output layer (continuous inputs).
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec: TensorSpec,
        embedding_dim: int,
        conv_layer_params: tuple[tuple, ...] | None = None,
        fc_layer_params: tuple[int, ...] | None = None,
        activation: Callable = torch.relu_,
        last_activation: Callable = math_ops.identity,
        name: str = "EmbeddingPreproc",
    ):
        super().__init__(input_tensor_spec, name=name)
        self._discrete = input_tensor_spec.is_discrete
        if self._discrete:
            if not isinstance(input_tensor_spec, BoundedTensorSpec):
                raise ValueError(f"{name}: a discrete input needs a BoundedTensorSpec")
            low, high = int(input_tensor_spec.minimum), int(input_tensor_spec.maximum)
            self._minimum = low
            self._embedding = nn.Embedding(high - low + 1, embedding_dim)
        else:
            self._embedding = EncodingNetwork(
                input_tensor_spec=input_tensor_spec,
                conv_layer_params=conv_layer_params,
                fc_layer_params=fc_layer_params,
                activation=activation,
                last_layer_size=embedding_dim,
                last_activation=last_activation,
                name="preprocessor_embedding_net",
            )
        shape = (*input_tensor_spec.shape, embedding_dim) if self._discrete else (embedding_dim,)
        self._output_spec = TensorSpec(shape)

    def forward(self, inputs, state=()):
        if self._discrete:
            return self._embedding(inputs.long() - self._minimum), state
        return self._embedding(inputs)[0], state


class _Keep:
    """Marks an input kept as it is (None in ``input_preprocessors``: a leaf, where a nest's
    None is an empty node)."""


def _keep_marked(preprocessors):
    if preprocessors is None:
        return _Keep()
    if isinstance(preprocessors, dict):
        return type(preprocessors)((k, _keep_marked(v)) for k, v in preprocessors.items())
    if nest.is_namedtuple(preprocessors):
        return type(preprocessors)(*map(_keep_marked, preprocessors))
    if isinstance(preprocessors, (list, tuple)):
        return type(preprocessors)(map(_keep_marked, preprocessors))
    return preprocessors


def _as_preprocessor(preprocessor, spec, modules: nn.ModuleList) -> Network:
    """One input's preprocessor as a feed-forward network of its own (a copy of a given
    network, so that networks built from one conf share nothing)."""
    if isinstance(preprocessor, _Keep):
        return NetworkWrapper(math_ops.identity, spec)
    if isinstance(preprocessor, Network):
        if preprocessor.is_recurrent:
            raise ValueError(
                f"input_preprocessors: {preprocessor.name} has a state; preprocessors must be "
                "feed-forward"
            )
        preprocessor = preprocessor.copy()
    elif callable(preprocessor):
        preprocessor = NetworkWrapper(preprocessor, spec)
    else:
        raise ValueError(f"input_preprocessors: {preprocessor!r} is not a network or callable")
    modules.append(preprocessor)
    return preprocessor


class PreprocessorNetwork(Network):
    """The front of a network with a nested input: ``input_preprocessors`` (a nest matching
    ``input_tensor_spec`` down to its own leaves; None keeps an input) each applied to their
    input, then ``preprocessing_combiner`` (e.g. ``NestConcat()``; needed when the result is
    a nest) making one tensor. ``forward`` returns it; a subclass builds on
    ``self._processed_input_tensor_spec``.

    Args:
        input_tensor_spec: the nest of input specs.
        input_preprocessors: nest of networks, modules, functions or None.
        preprocessing_combiner: a combiner of the preprocessed nest (``alf.nest.utils``).
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec,
        input_preprocessors=None,
        preprocessing_combiner=None,
        name: str = "PreprocessorNetwork",
    ):
        super().__init__(input_tensor_spec, name=name)
        self._input_preprocessor_modules = nn.ModuleList()
        self._input_preprocessors = None
        spec = input_tensor_spec
        if input_preprocessors is not None:
            input_preprocessors = _keep_marked(input_preprocessors)
            self._input_preprocessors = nest.map_structure_up_to(
                input_preprocessors,
                lambda p, s: _as_preprocessor(p, s, self._input_preprocessor_modules),
                input_preprocessors,
                input_tensor_spec,
            )
            spec = nest.map_structure(lambda net: net.output_spec, self._input_preprocessors)
        if nest.is_nested(spec):
            if preprocessing_combiner is None:
                raise ValueError(
                    f"{name}: the (preprocessed) input is a nest {spec}: give a "
                    "preprocessing_combiner (e.g. alf.nest.utils.NestConcat())"
                )
            spec = preprocessing_combiner(spec)
        elif preprocessing_combiner is not None:
            raise ValueError(
                f"{name}: preprocessing_combiner is given but the (preprocessed) input is a "
                f"single tensor of spec {spec}; remove the combiner."
            )
        self._preprocessing_combiner = preprocessing_combiner
        self._processed_input_tensor_spec = spec

    def forward(self, inputs, state=()):
        if self._input_preprocessors is not None:
            inputs = nest.map_structure_up_to(
                self._input_preprocessors, lambda p, x: p(x)[0], self._input_preprocessors, inputs
            )
        if self._preprocessing_combiner is not None:
            inputs = self._preprocessing_combiner(inputs)
        return inputs, state
