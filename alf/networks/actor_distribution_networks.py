"""``ActorDistributionNetwork``: observation → action distribution (a policy)."""

from __future__ import annotations

from collections.abc import Callable

import torch

import alf
import alf.nest as nest
from alf.networks.encoding_networks import EncodingNetwork
from alf.networks.network import Network
from alf.networks.projection_networks import (
    CategoricalProjectionNetwork,
    NormalProjectionNetwork,
)


@alf.configurable
class ActorDistributionNetwork(Network):
    """An ``EncodingNetwork`` followed by one projection network per action spec.

    Discrete action specs get ``discrete_projection_net_ctor(input_size=...,
    action_spec=...)``, continuous ones ``continuous_projection_net_ctor(...)``.
    For a single action spec the output is one distribution; for a nest of specs,
    the same nest of distributions.

    Args:
        input_tensor_spec: nest of ``TensorSpec`` of the observation.
        action_spec: (nest of) ``BoundedTensorSpec`` of the action.
        input_preprocessors: see ``EncodingNetwork``.
        input_preprocessors_ctor: see ``EncodingNetwork``.
        preprocessing_combiner: see ``EncodingNetwork``.
        conv_layer_params: see ``EncodingNetwork``.
        fc_layer_params: hidden layer sizes of the encoder.
        activation: activation of the hidden layers.
        kernel_initializer: initializer of the hidden layers' weights.
        use_fc_bn: batch normalization in the hidden FC layers.
        use_fc_ln: layer normalization in the hidden FC layers.
        fc_bn_ctor: see ``EncodingNetwork`` (e.g. ``alf.layers.BatchRenorm1d``).
        fc_bn_after_activation: see ``EncodingNetwork`` (CrossQ's placement).
        discrete_projection_net_ctor: ctor of the projection for discrete specs.
        continuous_projection_net_ctor: ctor of the projection for continuous specs.
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec,
        action_spec,
        input_preprocessors=None,
        input_preprocessors_ctor: Callable | None = None,
        preprocessing_combiner=None,
        conv_layer_params: tuple[tuple, ...] | None = None,
        fc_layer_params: tuple[int, ...] | None = None,
        activation: Callable | None = torch.relu_,
        kernel_initializer: Callable | None = None,
        use_fc_bn: bool = False,
        use_fc_ln: bool = False,
        discrete_projection_net_ctor: Callable = CategoricalProjectionNetwork,
        continuous_projection_net_ctor: Callable = NormalProjectionNetwork,
        fc_bn_ctor: Callable | None = None,
        fc_bn_after_activation: bool = False,
        name: str = "ActorDistributionNetwork",
    ):
        super().__init__(input_tensor_spec, name=name)
        self._action_spec = action_spec
        self._encoding_net = EncodingNetwork(
            input_tensor_spec,
            input_preprocessors=input_preprocessors,
            input_preprocessors_ctor=input_preprocessors_ctor,
            preprocessing_combiner=preprocessing_combiner,
            conv_layer_params=conv_layer_params,
            fc_layer_params=fc_layer_params,
            activation=activation,
            kernel_initializer=kernel_initializer,
            last_layer_size=None,
            last_activation=None,
            last_kernel_initializer=None,
            last_use_bias=True,
            use_fc_bn=use_fc_bn,
            use_fc_ln=use_fc_ln,
            fc_bn_ctor=fc_bn_ctor,
            fc_bn_after_activation=fc_bn_after_activation,
            name=name + ".encoding_net",
        )
        projections = make_projection_nets(
            action_spec,
            self._encoding_net.output_size,
            discrete_projection_net_ctor,
            continuous_projection_net_ctor,
        )
        self._nested = nest.is_nested(action_spec)
        if self._nested:
            self._projection_nets = projections
        else:
            self._projection_net = projections[0]

    @property
    def action_spec(self):
        return self._action_spec

    def forward(self, observation, state=()):
        """``([B, ...] observation nest, state) -> (action distribution(s), state)``."""
        encoding = self._encoding_net(observation)[0]
        if not self._nested:
            return self._projection_net(encoding)[0], state
        dists = [net(encoding)[0] for net in self._projection_nets]
        return nest.pack_sequence_as(self._action_spec, dists), state


def make_projection_nets(
    action_spec, input_size: int, discrete_ctor, continuous_ctor
) -> torch.nn.ModuleList:
    """One projection network per spec of ``nest.flatten(action_spec)``: ``discrete_ctor``
    for discrete specs, ``continuous_ctor`` for continuous ones, each called as
    ``ctor(input_size=input_size, action_spec=spec)``."""
    return torch.nn.ModuleList(
        (discrete_ctor if spec.is_discrete else continuous_ctor)(
            input_size=input_size, action_spec=spec
        )
        for spec in nest.flatten(action_spec)
    )
