"""The Nature-CNN layout of the Atari confs on stacked 84x84 frames, in the actor, value and
Q networks (uint8 input is cast to float; the confs scale it with ImageScaleTransformer)."""

import os

import torch

from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.encoding_networks import EncodingNetwork
from alf.networks.q_networks import QNetwork
from alf.networks.value_networks import ValueNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec

CONV = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
FRAMES = TensorSpec((4, 84, 84), torch.float32)
ACTIONS = BoundedTensorSpec((), torch.int64, 0, 3)

# conv 4->32 8x8, 32->64 4x4, 64->64 3x3 (with biases), then 7*7*64 = 3136 -> 512.
NATURE_CNN_PARAMS = (4 * 32 * 64 + 32) + (32 * 64 * 16 + 64) + (64 * 64 * 9 + 64)
NATURE_CNN_PARAMS += 3136 * 512 + 512


def _num_params(module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_encoding_network_is_the_nature_cnn():
    net = EncodingNetwork(FRAMES, conv_layer_params=CONV, fc_layer_params=(512,))
    assert net.output_size == 512
    assert _num_params(net) == NATURE_CNN_PARAMS == 1_684_128
    out, _ = net(torch.rand(2, 4, 84, 84))
    assert out.shape == (2, 512) and (out >= 0).all()  # ReLU


def test_actor_value_and_q_networks_take_stacked_frames():
    actor = ActorDistributionNetwork(
        FRAMES, ACTIONS, conv_layer_params=CONV, fc_layer_params=(512,)
    )
    value = ValueNetwork(FRAMES, conv_layer_params=CONV, fc_layer_params=(512,))
    q = QNetwork(FRAMES, ACTIONS, conv_layer_params=CONV, fc_layer_params=(512,))
    x = torch.rand(3, 4, 84, 84)
    dist, _ = actor(x)
    assert dist.probs.shape == (3, 4)
    assert value(x)[0].shape == (3,)
    assert q(x)[0].shape == (3, 4)
    # One CNN + a head each: 4 logits, 1 value, 4 Q values (weights and biases).
    assert _num_params(actor) == NATURE_CNN_PARAMS + 512 * 4 + 4
    assert _num_params(value) == NATURE_CNN_PARAMS + 512 + 1
    assert _num_params(q) == NATURE_CNN_PARAMS + 512 * 4 + 4


def test_uint8_frames_are_cast_to_float():
    spec = TensorSpec((4, 84, 84), torch.uint8)
    net = EncodingNetwork(spec, conv_layer_params=CONV, fc_layer_params=(512,))
    frames = torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8)
    torch.testing.assert_close(net(frames)[0], net(frames.float())[0])


def test_the_breakout_ppo_conf_shares_one_nature_cnn():
    """SB3's CnnPolicy: one Nature-CNN (``atari_networks.nature_cnn_encoder``) and two linear
    heads, 4 logits (orthogonal, gain 0.01) and 1 value (gain 1), biases 0."""
    import alf
    from alf.algorithms.ppo_algorithm import PPOAlgorithm
    from alf.examples.atari_networks import (
        NATURE_CNN_CONV_LAYER_PARAMS,
        NATURE_CNN_FC_LAYER_PARAMS,
        nature_cnn_encoder,
    )
    from alf.utils import common

    assert NATURE_CNN_CONV_LAYER_PARAMS == CONV and NATURE_CNN_FC_LAYER_PARAMS == (512,)
    assert _num_params(nature_cnn_encoder(input_tensor_spec=FRAMES)) == NATURE_CNN_PARAMS
    alf.reset_configs()
    try:
        conf = os.path.join(os.path.dirname(__file__), "..", "..", "alf", "examples")
        common.parse_conf_file(os.path.join(conf, "ppo_breakout_conf.py"), [], [])
        torch.manual_seed(0)
        algorithm = PPOAlgorithm(observation_spec=FRAMES, action_spec=ACTIONS)
    finally:
        alf.reset_configs()
    assert _num_params(algorithm) == NATURE_CNN_PARAMS + (512 * 4 + 4) + (512 + 1)
    logits = algorithm.actor_network.head._projection_net._projection_layer
    value = algorithm.value_network.head._fc_layers[0]
    torch.testing.assert_close(logits.weight @ logits.weight.T, 1e-4 * torch.eye(4))
    torch.testing.assert_close(value.weight @ value.weight.T, torch.ones(1, 1))
    assert not logits.bias.any() and not value.bias.any()
