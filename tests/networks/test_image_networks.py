"""ImageEncodingNetwork and ImageDecodingNetwork against hand-written convolutions."""

import pytest
import torch
import torch.nn.functional as F

from alf.layers import ParallelConv2D
from alf.networks import ImageDecodingNetwork, ImageEncodingNetwork
from alf.networks.encoding_networks import ImageEncodingNetwork as AlfPath
from alf.tensor_specs import TensorSpec


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_encoder_with_same_padding_by_hand():
    net = ImageEncodingNetwork(
        2, (7, 6), ((3, 3, 1), (4, (3, 5), 2, 9)), same_padding=True, flatten_output=True
    )
    assert AlfPath is ImageEncodingNetwork
    c1, c2 = net[0], net[1]
    x = torch.randn(3, 2, 7, 6)
    z = torch.relu(F.conv2d(x, c1.weight, c1.bias, padding=(1, 1)))  # same size
    z = torch.relu(F.conv2d(z, c2.weight, c2.bias, stride=2, padding=(1, 2)))  # 9 replaced
    assert z.shape == (3, 4, 4, 3)
    torch.testing.assert_close(net(x)[0], z.flatten(1))
    assert net.output_spec == TensorSpec((4 * 4 * 3,))


def test_encoder_keeps_images_without_flatten():
    net = ImageEncodingNetwork(1, 5, ((2, 3, 1),))
    assert net.output_spec == TensorSpec((2, 3, 3))


def test_decoder_by_hand():
    net = ImageDecodingNetwork(
        4,
        ((3, 3, 2), (2, 3, 1)),
        start_decoding_size=(2, 3),
        start_decoding_channels=5,
        same_padding=True,
        preprocess_fc_layer_params=(6,),
    )
    fc1, fc2, _, t1, t2 = (net[i] for i in range(5))
    x = torch.randn(2, 4)
    z = torch.relu(F.linear(x, fc1.weight, fc1.bias))
    z = torch.relu(F.linear(z, fc2.weight, fc2.bias)).reshape(2, 5, 2, 3)
    z = torch.relu(F.conv_transpose2d(z, t1.weight, t1.bias, stride=2, padding=1))
    z = torch.tanh(F.conv_transpose2d(z, t2.weight, t2.bias, stride=1, padding=1))
    assert z.shape == (2, 2, 3, 5)
    torch.testing.assert_close(net(x)[0], z)
    assert net.output_spec == TensorSpec((2, 3, 5))


def test_parallel_encoder_equals_single_encoders():
    net = ImageEncodingNetwork(1, 6, ((2, 3, 1), (3, 3, 2)), flatten_output=True)
    pnet = net.make_parallel(2)
    x = torch.randn(4, 2, 1, 6, 6)
    out = pnet(x)[0]
    convs = [m for m in pnet.modules() if isinstance(m, ParallelConv2D)]
    for i in range(2):
        z = x[:, i]
        for conv in convs:
            z = torch.relu(F.conv2d(z, conv.weight[i], conv.bias[i], stride=conv._conv.stride))
        torch.testing.assert_close(out[:, i], z.flatten(1))


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="use_batch_ensemble=True is not supported"):
        ImageEncodingNetwork(1, 6, ((2, 3, 1),), use_batch_ensemble=True)
    with pytest.raises(ValueError, match="conv_layer_params must be a non-empty tuple"):
        ImageEncodingNetwork(1, 6, ())
    with pytest.raises(ValueError, match=r"transconv_layer_params entry is \(filters"):
        ImageDecodingNetwork(4, ((3, 3),), start_decoding_size=2, start_decoding_channels=1)
