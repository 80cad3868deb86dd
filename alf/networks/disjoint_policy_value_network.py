r"""``DisjointPolicyValueNetwork``: PPG's policy network with an auxiliary value head, and
its value network (Cobbe et al. 2021, "Phasic Policy Gradient").

Three heads on one observation:

* the policy :math:`\pi_\theta(\cdot|s)` and the auxiliary value :math:`V_{\theta}^{aux}(s)`,
  both on the policy encoder's output (the policy network, parameters :math:`\theta`);
* the value :math:`V_\phi(s)` (the value network, parameters :math:`\phi`).

``is_sharing_encoder=False`` (the paper's "dual" architecture): the value network has an
encoder of its own. ``is_sharing_encoder=True`` (the paper's single network): the value
head reads the policy encoder's output through a stop-gradient, so no value loss ever
moves the shared encoder (OpenAI's implementation detaches it in both phases; the
auxiliary value head is what trains the encoder on values).

``forward`` gives ``((action distribution, value, aux value), ())``. ``policy_network``
and ``value_network`` are the policy and the value function from observations: views
holding this network's modules, not copies. With a shared encoder they are
``EncoderHeadNetwork``s, so ``PPGAlgorithm``'s policy phase runs ``encode`` once per step
and each head on its output; without, ``encode`` is the identity and each view encodes
for itself.
"""

from __future__ import annotations

from collections.abc import Callable

import alf
import alf.nest as nest
from alf.layers import FC
from alf.networks.actor_distribution_networks import make_projection_nets
from alf.networks.encoder_head import EncoderHeadNetwork
from alf.networks.encoding_networks import EncodingNetwork
from alf.networks.network import Network
from alf.networks.projection_networks import (
    CategoricalProjectionNetwork,
    NormalProjectionNetwork,
)
from alf.tensor_specs import TensorSpec


class _PolicyHead(Network):
    """Encoding ``[B, D]`` → one projection network per action spec (the action nest)."""

    def __init__(self, input_size: int, action_spec, discrete_ctor, continuous_ctor, name: str):
        super().__init__(TensorSpec((input_size,)), name=name)
        self._action_spec = action_spec
        self._projections = make_projection_nets(
            action_spec, input_size, discrete_ctor, continuous_ctor
        )

    def forward(self, encoding, state=()):
        dists = [net(encoding)[0] for net in self._projections]
        return nest.pack_sequence_as(self._action_spec, dists), state


class _ScalarHead(Network):
    """Encoding ``[B, D]`` → ``[B]``: one linear unit (through a stop-gradient if ``detach``)."""

    def __init__(self, input_size: int, detach: bool, name: str):
        super().__init__(TensorSpec((input_size,)), name=name)
        self._fc = FC(input_size, 1)
        self._detach = detach

    def forward(self, encoding, state=()):
        if self._detach:
            encoding = encoding.detach()
        return self._fc(encoding).squeeze(-1), state

    @property
    def output_spec(self):
        return TensorSpec(())


class _Chain(Network):
    """``observation → head(encoder(observation))`` for a feed-forward encoder and head."""

    def __init__(self, encoder: Network, head: Network, name: str):
        super().__init__(encoder.input_tensor_spec, name=name)
        self.encoder = encoder
        self.head = head

    def forward(self, observation, state=()):
        return self.head(self.encoder(observation)[0])[0], state


@alf.configurable
class DisjointPolicyValueNetwork(Network):
    """PPG's three-headed network (module doc).

    Args:
        observation_spec: nest of ``TensorSpec`` of the observation.
        action_spec: (nest of) ``BoundedTensorSpec`` of the action.
        encoding_network_ctor: ``ctor(input_tensor_spec=)`` → a feed-forward network with a
            flat ``[B, D]`` output: the policy encoder, and (not sharing) the value encoder.
        is_sharing_encoder: one encoder for both networks, the value head detached from it.
        discrete_projection_net_ctor: ``ctor(input_size=, action_spec=)`` of the policy
            head of a discrete action spec.
        continuous_projection_net_ctor: the same for a continuous action spec.
        name: name of the network.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        encoding_network_ctor: Callable = EncodingNetwork,
        is_sharing_encoder: bool = False,
        discrete_projection_net_ctor: Callable = CategoricalProjectionNetwork,
        continuous_projection_net_ctor: Callable = NormalProjectionNetwork,
        name: str = "DisjointPolicyValueNetwork",
    ):
        super().__init__(observation_spec, name=name)
        self._is_sharing_encoder = bool(is_sharing_encoder)
        self._actor_encoder = _feed_forward_encoder(encoding_network_ctor, observation_spec, name)
        size = self._actor_encoder.output_spec.shape[0]
        self._policy_head = _PolicyHead(
            size,
            action_spec,
            discrete_projection_net_ctor,
            continuous_projection_net_ctor,
            name=f"{name}.policy_head",
        )
        self._aux_head = _ScalarHead(size, detach=False, name=f"{name}.aux_head")
        if self._is_sharing_encoder:
            self._value_encoder = None
            self._value_head = _ScalarHead(size, detach=True, name=f"{name}.value_head")
            views = (
                EncoderHeadNetwork(self._actor_encoder, self._policy_head, f"{name}.policy"),
                EncoderHeadNetwork(self._actor_encoder, self._value_head, f"{name}.value"),
            )
        else:
            self._value_encoder = _feed_forward_encoder(
                encoding_network_ctor, observation_spec, name
            )
            value_size = self._value_encoder.output_spec.shape[0]
            self._value_head = _ScalarHead(value_size, detach=False, name=f"{name}.value_head")
            views = (
                _Chain(self._actor_encoder, self._policy_head, f"{name}.policy"),
                _Chain(self._value_encoder, self._value_head, f"{name}.value"),
            )
        # views of the modules registered above (not registered again: one state-dict
        # entry per parameter)
        object.__setattr__(self, "_views", views)

    @property
    def is_sharing_encoder(self) -> bool:
        return self._is_sharing_encoder

    @property
    def policy_network(self) -> Network:
        """``observation → π(·|s)``: the policy encoder and the policy head."""
        return self._views[0]

    @property
    def value_network(self) -> Network:
        """``observation → V(s)`` ``[B]``: the value encoder (or the detached shared one)
        and the value head."""
        return self._views[1]

    def encode(self, observation):
        """What the heads of ``policy_network`` / ``value_network`` read: the shared
        encoding (``is_sharing_encoder``), else the observation itself (each view then
        is its own encoder and head)."""
        if self._is_sharing_encoder:
            return self._actor_encoder(observation)[0]
        return observation

    def forward(self, observation, state=(), require_aux: bool = True):
        """``((π(·|s), V(s) [B], V_aux(s) [B] or ()), ())``; ``require_aux=False`` skips the
        auxiliary head (the policy phase does not train it)."""
        encoding = self._actor_encoder(observation)[0]
        dist = self._policy_head(encoding)[0]
        if self._is_sharing_encoder:
            value = self._value_head(encoding)[0]
        else:
            value = self._value_head(self._value_encoder(observation)[0])[0]
        aux = self._aux_head(encoding)[0] if require_aux else ()
        return (dist, value, aux), state


def _feed_forward_encoder(ctor: Callable, observation_spec, name: str) -> Network:
    encoder = ctor(input_tensor_spec=observation_spec)
    if encoder.is_recurrent or len(encoder.output_spec.shape) != 1:
        raise ValueError(
            f"{name}.encoding_network_ctor must build a feed-forward network with a flat "
            f"[B, D] output, got {type(encoder).__name__} (recurrent: {encoder.is_recurrent}, "
            f"output {encoder.output_spec})"
        )
    return encoder
