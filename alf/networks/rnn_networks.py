"""Recurrent networks: ``LSTMEncodingNetwork`` / ``GRUEncodingNetwork`` and the recurrent
actor and value networks built on them (``ActorDistributionRNNNetwork``, ``ValueRNNNetwork``).

A recurrent network maps ``(inputs [B, ...], state) -> (output [B, N], new_state)``
one time step at a time, like every alf network; its ``state_spec`` is a list with
one entry per recurrent layer: ``(h, c)`` for an LSTM layer, ``h`` for a GRU layer,
each ``[hidden_size]``. The algorithms reset the state to zeros wherever a time step
is FIRST (``RLAlgorithm`` during rollout, the evaluator and ``play``, and
``train_steps`` when training on sequences), so an episode never sees the previous
episode's memory.

Layout (all parts optional but the recurrent layers):
``inputs → EncodingNetwork(preprocessors, conv, pre_fc_layer_params) →
LSTM/GRU layers (hidden_size) → post_fc_layer_params (+ last layer)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
import torch.nn as nn

import alf
import alf.nest as nest
from alf.configuration.argtypes import Count
from alf.networks.actor_distribution_networks import make_projection_nets
from alf.networks.encoding_networks import EncodingNetwork
from alf.networks.network import Network
from alf.networks.projection_networks import (
    CategoricalProjectionNetwork,
    NormalProjectionNetwork,
)
from alf.networks.value_networks import _SCALAR_SPEC
from alf.tensor_specs import TensorSpec


class _RecurrentEncodingNetwork(Network):
    """``EncodingNetwork`` → recurrent layers (``_CELL``: LSTM or GRU) → FC layers.

    Args:
        input_tensor_spec: nest of ``TensorSpec`` of one input.
        input_preprocessors: see ``EncodingNetwork``.
        preprocessing_combiner: see ``EncodingNetwork``.
        conv_layer_params: see ``EncodingNetwork``.
        pre_fc_layer_params: FC layer sizes before the recurrent layers.
        hidden_size: an int or a tuple of ints: the recurrent layers' sizes.
        post_fc_layer_params: FC layer sizes after the recurrent layers.
        activation: activation of the FC (and conv) layers.
        kernel_initializer: initializer of the FC (and conv) weights.
        last_layer_size: size of an extra final FC layer (None: none).
        last_activation: its activation (identity if None).
        last_kernel_initializer: its weight initializer.
        name: name of the network (the class name if None).
    """

    _CELL = ""

    def __init__(
        self,
        input_tensor_spec,
        input_preprocessors=None,
        preprocessing_combiner=None,
        conv_layer_params: tuple[tuple, ...] | None = None,
        pre_fc_layer_params: tuple[int, ...] | None = None,
        hidden_size: int | tuple[int, ...] = (100,),
        post_fc_layer_params: tuple[int, ...] | None = None,
        activation: Callable | None = torch.relu_,
        kernel_initializer: Callable | None = None,
        last_layer_size: Count | None = None,
        last_activation: Callable | None = None,
        last_kernel_initializer: Callable | None = None,
        name: str | None = None,
    ):
        name = name or type(self).__name__
        sizes = (hidden_size,) if isinstance(hidden_size, int) else tuple(hidden_size)
        if not sizes or any(int(s) <= 0 for s in sizes):
            raise ValueError(f"{name}: hidden_size must be positive ints, got {hidden_size!r}")
        if self._CELL == "lstm":
            state_spec = [(TensorSpec((s,)), TensorSpec((s,))) for s in sizes]
        else:
            state_spec = [TensorSpec((s,)) for s in sizes]
        super().__init__(input_tensor_spec, state_spec=state_spec, name=name)
        self._pre_net = EncodingNetwork(
            input_tensor_spec,
            input_preprocessors=input_preprocessors,
            preprocessing_combiner=preprocessing_combiner,
            conv_layer_params=conv_layer_params,
            fc_layer_params=pre_fc_layer_params,
            activation=activation,
            kernel_initializer=kernel_initializer,
            name=name + ".pre_net",
        )
        layer_cls = nn.LSTM if self._CELL == "lstm" else nn.GRU
        input_size = self._pre_net.output_size
        self._rnns = nn.ModuleList()
        for size in sizes:
            self._rnns.append(layer_cls(input_size, size))
            input_size = size
        self._post_net = EncodingNetwork(
            TensorSpec((input_size,)),
            fc_layer_params=post_fc_layer_params,
            activation=activation,
            kernel_initializer=kernel_initializer,
            last_layer_size=last_layer_size,
            last_activation=last_activation,
            last_kernel_initializer=last_kernel_initializer,
            name=name + ".post_net",
        )

    @property
    def output_size(self) -> int:
        return self._post_net.output_size

    def forward(self, inputs, state):
        """``([B, ...] inputs, state) -> ([B, N] output, new state)``: one time step."""
        x = self._pre_net(inputs)[0].unsqueeze(0)
        new_state = []
        for rnn, layer_state in zip(self._rnns, state):
            if self._CELL == "lstm":
                h, c = layer_state
                x, (h, c) = rnn(x, (h.unsqueeze(0), c.unsqueeze(0)))
                new_state.append((h.squeeze(0), c.squeeze(0)))
            else:
                x, h = rnn(x, layer_state.unsqueeze(0))
                new_state.append(h.squeeze(0))
        return self._post_net(x.squeeze(0))[0], new_state


@alf.configurable
class LSTMEncodingNetwork(_RecurrentEncodingNetwork):
    """``EncodingNetwork`` → LSTM layers → FC layers (see the module doc).

    State: ``[(h, c), ...]``, one ``([B, size], [B, size])`` pair per LSTM layer.
    Arguments: see ``_RecurrentEncodingNetwork``; ``hidden_size`` gives the LSTM sizes.
    """

    _CELL = "lstm"


@alf.configurable
class GRUEncodingNetwork(_RecurrentEncodingNetwork):
    """``EncodingNetwork`` → GRU layers → FC layers (see the module doc).

    State: ``[h, ...]``, one ``[B, size]`` tensor per GRU layer.
    Arguments: see ``_RecurrentEncodingNetwork``; ``hidden_size`` gives the GRU sizes.
    """

    _CELL = "gru"


def _encoding_ctor(rnn_type: str):
    if rnn_type == "lstm":
        return LSTMEncodingNetwork
    if rnn_type == "gru":
        return GRUEncodingNetwork
    raise ValueError(f"rnn_type must be 'lstm' or 'gru', got {rnn_type!r}")


@alf.configurable
class ActorDistributionRNNNetwork(Network):
    """A recurrent policy: an LSTM/GRU encoding network, then one projection per action spec.

    Args:
        input_tensor_spec: nest of ``TensorSpec`` of the observation.
        action_spec: (nest of) ``BoundedTensorSpec`` of the action.
        input_preprocessors: see ``EncodingNetwork``.
        preprocessing_combiner: see ``EncodingNetwork``.
        conv_layer_params: see ``EncodingNetwork``.
        fc_layer_params: FC layer sizes before the recurrent layers.
        lstm_hidden_size: an int or a tuple: the recurrent layers' sizes.
        actor_fc_layer_params: FC layer sizes after the recurrent layers (ALF's names).
        activation: activation of the FC layers.
        kernel_initializer: initializer of the FC weights.
        rnn_type: ``"lstm"`` or ``"gru"``.
        discrete_projection_net_ctor: projection for discrete specs.
        continuous_projection_net_ctor: projection for continuous specs.
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec,
        action_spec,
        input_preprocessors=None,
        preprocessing_combiner=None,
        conv_layer_params: tuple[tuple, ...] | None = None,
        fc_layer_params: tuple[int, ...] | None = None,
        lstm_hidden_size: int | tuple[int, ...] = (100,),
        actor_fc_layer_params: tuple[int, ...] | None = None,
        activation: Callable | None = torch.relu_,
        kernel_initializer: Callable | None = None,
        rnn_type: Literal["lstm", "gru"] = "lstm",
        discrete_projection_net_ctor: Callable = CategoricalProjectionNetwork,
        continuous_projection_net_ctor: Callable = NormalProjectionNetwork,
        name: str = "ActorDistributionRNNNetwork",
    ):
        encoding_net = _encoding_ctor(rnn_type)(
            input_tensor_spec,
            input_preprocessors=input_preprocessors,
            preprocessing_combiner=preprocessing_combiner,
            conv_layer_params=conv_layer_params,
            pre_fc_layer_params=fc_layer_params,
            hidden_size=lstm_hidden_size,
            post_fc_layer_params=actor_fc_layer_params,
            activation=activation,
            kernel_initializer=kernel_initializer,
            name=name + ".encoding_net",
        )
        super().__init__(input_tensor_spec, state_spec=encoding_net.state_spec, name=name)
        self._encoding_net = encoding_net
        self._action_spec = action_spec
        self._nested = nest.is_nested(action_spec)
        self._projection_nets = make_projection_nets(
            action_spec,
            encoding_net.output_size,
            discrete_projection_net_ctor,
            continuous_projection_net_ctor,
        )

    @property
    def action_spec(self):
        return self._action_spec

    def forward(self, observation, state):
        """``([B, ...] observation, state) -> (action distribution(s), new state)``."""
        encoding, state = self._encoding_net(observation, state)
        dists = [net(encoding)[0] for net in self._projection_nets]
        if not self._nested:
            return dists[0], state
        return nest.pack_sequence_as(self._action_spec, dists), state


@alf.configurable
class ValueRNNNetwork(Network):
    """A recurrent state-value network: LSTM/GRU encoding network + a linear value layer.

    Args:
        input_tensor_spec: nest of ``TensorSpec`` of the observation.
        output_tensor_spec: ``TensorSpec`` of one value (scalar by default).
        input_preprocessors: see ``EncodingNetwork``.
        preprocessing_combiner: see ``EncodingNetwork``.
        conv_layer_params: see ``EncodingNetwork``.
        fc_layer_params: FC layer sizes before the recurrent layers.
        lstm_hidden_size: an int or a tuple: the recurrent layers' sizes.
        value_fc_layer_params: FC layer sizes after the recurrent layers (ALF's names).
        activation: activation of the FC layers.
        kernel_initializer: initializer of the FC weights.
        last_kernel_initializer: initializer of the value layer (uniform ±0.03 if None,
            as ``ValueNetwork``).
        rnn_type: ``"lstm"`` or ``"gru"``.
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec,
        output_tensor_spec=_SCALAR_SPEC,
        input_preprocessors=None,
        preprocessing_combiner=None,
        conv_layer_params: tuple[tuple, ...] | None = None,
        fc_layer_params: tuple[int, ...] | None = None,
        lstm_hidden_size: int | tuple[int, ...] = (100,),
        value_fc_layer_params: tuple[int, ...] | None = None,
        activation: Callable | None = torch.relu_,
        kernel_initializer: Callable | None = None,
        last_kernel_initializer: Callable | None = None,
        rnn_type: Literal["lstm", "gru"] = "lstm",
        name: str = "ValueRNNNetwork",
    ):
        if last_kernel_initializer is None:

            def last_kernel_initializer(w):
                return nn.init.uniform_(w, -0.03, 0.03)

        value_shape = tuple(output_tensor_spec.shape)
        encoding_net = _encoding_ctor(rnn_type)(
            input_tensor_spec,
            input_preprocessors=input_preprocessors,
            preprocessing_combiner=preprocessing_combiner,
            conv_layer_params=conv_layer_params,
            pre_fc_layer_params=fc_layer_params,
            hidden_size=lstm_hidden_size,
            post_fc_layer_params=value_fc_layer_params,
            activation=activation,
            kernel_initializer=kernel_initializer,
            last_layer_size=max(1, int(torch.Size(value_shape).numel())),
            last_kernel_initializer=last_kernel_initializer,
            name=name + ".encoding_net",
        )
        super().__init__(input_tensor_spec, state_spec=encoding_net.state_spec, name=name)
        self._value_shape = value_shape
        self._encoding_net = encoding_net

    def forward(self, observation, state):
        """``([B, ...] observation, state) -> ([B, *output_shape] value, new state)``."""
        value, state = self._encoding_net(observation, state)
        if not self._value_shape:
            return value.squeeze(-1), state
        return value.reshape(value.shape[:-1] + self._value_shape), state
