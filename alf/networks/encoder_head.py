"""``EncoderHeadNetwork``: a head network on the output of a (shared) encoder.

``ActorCriticAlgorithm(encoding_network_ctor=...)`` encodes the observation once and feeds
the encoding to its actor and value heads. What reads ``algorithm.actor_network`` (or
``value_network``) from outside still needs a whole network from observations: this is it,
``head(encoder(observation))``, holding the very encoder and head modules the algorithm
trains (not copies), so it always computes what the algorithm computes.
"""

from __future__ import annotations

from alf.networks.network import Network


class EncoderHeadNetwork(Network):
    """``(observation, state) -> head(encoder(observation), state)``.

    The encoder must be feed-forward; the state is the head's.

    Args:
        encoder: a feed-forward network from observations to an encoding.
        head: a network from ``encoder.output_spec`` inputs.
        name: name of the network.
    """

    def __init__(self, encoder: Network, head: Network, name: str = "EncoderHeadNetwork"):
        if encoder.is_recurrent:
            raise ValueError(
                f"{name}: the encoder {encoder.name} is recurrent; only a feed-forward "
                "encoder can be shared"
            )
        super().__init__(encoder.input_tensor_spec, state_spec=head.state_spec, name=name)
        self.encoder = encoder
        self.head = head

    def forward(self, inputs, state=()):
        """``([B, ...] observation nest, state) -> (head output, head state)``."""
        encoding, _ = self.encoder(inputs)
        return self.head(encoding, state)

    @property
    def output_spec(self):
        return self.head.output_spec
