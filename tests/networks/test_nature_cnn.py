"""The Nature-CNN layout of the Atari confs on stacked 84x84 frames, in the actor, value and
Q networks (uint8 input is cast to float; the confs scale it with ImageScaleTransformer)."""

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
