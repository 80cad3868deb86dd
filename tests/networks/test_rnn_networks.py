"""Recurrent networks: one step at a time equals torch's LSTM/GRU over the sequence."""

import pytest
import torch

from alf.networks.rnn_networks import (
    ActorDistributionRNNNetwork,
    GRUEncodingNetwork,
    LSTMEncodingNetwork,
    ValueRNNNetwork,
)
from alf.tensor_specs import BoundedTensorSpec, TensorSpec, zeros_from_spec


@pytest.mark.parametrize("cls", [LSTMEncodingNetwork, GRUEncodingNetwork])
def test_stepping_equals_the_sequence_model(cls):
    torch.manual_seed(0)
    net = cls(TensorSpec((3,)), hidden_size=(5, 4), post_fc_layer_params=(6,))
    inputs = torch.randn(7, 2, 3)  # [T, B, 3]
    state = zeros_from_spec(net.state_spec, 2)
    stepped = []
    for x in inputs:
        out, state = net(x, state)
        stepped.append(out)
    # the same computation by torch's modules over the whole sequence
    x = inputs
    for rnn in net._rnns:
        x, _ = rnn(x)
    expected = torch.stack([net._post_net(h)[0] for h in x])
    torch.testing.assert_close(torch.stack(stepped), expected)
    assert net.output_size == 6


def test_state_specs_and_shapes():
    obs = TensorSpec((3,))
    lstm = LSTMEncodingNetwork(obs, hidden_size=8)
    gru = GRUEncodingNetwork(obs, hidden_size=(8, 6))
    assert [tuple(s.shape for s in pair) for pair in lstm.state_spec] == [((8,), (8,))]
    assert [s.shape for s in gru.state_spec] == [(8,), (6,)]
    assert lstm.is_recurrent and gru.is_recurrent
    with pytest.raises(ValueError, match="hidden_size"):
        LSTMEncodingNetwork(obs, hidden_size=())
    with pytest.raises(ValueError, match="rnn_type"):
        ValueRNNNetwork(obs, rnn_type="transformer")


def test_actor_and_value_rnn_networks_carry_state():
    torch.manual_seed(1)
    obs = TensorSpec((3,))
    actor = ActorDistributionRNNNetwork(
        obs, BoundedTensorSpec((), torch.int64, 0, 2), lstm_hidden_size=8, rnn_type="gru"
    )
    value = ValueRNNNetwork(obs, lstm_hidden_size=(8,))
    x = torch.randn(4, 3)
    dist, actor_state = actor(x, zeros_from_spec(actor.state_spec, 4))
    v, value_state = value(x, zeros_from_spec(value.state_spec, 4))
    assert dist.logits.shape == (4, 3) and v.shape == (4,)
    # the second step depends on the state carried from the first
    dist2, _ = actor(x, actor_state)
    assert not torch.allclose(dist2.logits, dist.logits)
    twin = actor.copy()
    assert twin.state_spec == actor.state_spec and twin is not actor
