"""EncodingNetwork: values against manual computation, nests, convs, errors, copies."""

import pytest
import torch
import torch.nn.functional as F

from alf.networks.encoding_networks import EncodingNetwork, NestConcat
from alf.tensor_specs import TensorSpec


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _manual_mlp(net, x, last_identity=False):
    linears = list(net._fc_layers)
    for i, layer in enumerate(linears):
        x = F.linear(x, layer.weight, layer.bias)
        if not (last_identity and i == len(linears) - 1):
            x = torch.relu(x)
    return x


def test_mlp_matches_manual_computation():
    net = EncodingNetwork(TensorSpec((4,)), fc_layer_params=(8, 6), last_layer_size=3)
    x = torch.randn(5, 4)
    out, state = net(x)
    assert out.shape == (5, 3) and state == ()
    torch.testing.assert_close(out, _manual_mlp(net, x, last_identity=True))
    assert net.output_spec == TensorSpec((3,))
    assert not net.is_recurrent and net.state_spec == ()


def test_no_layers_is_identity_and_int_inputs_are_cast():
    net = EncodingNetwork(TensorSpec((3,), torch.int64))
    x = torch.tensor([[1, 2, 3]])
    out, _ = net(x)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, x.float())


def test_nested_inputs_are_concatenated_in_sorted_key_order():
    spec = {"b": TensorSpec((2,)), "a": TensorSpec((3,)), "c": TensorSpec((1,), torch.int32)}
    net = EncodingNetwork(spec, fc_layer_params=(4,))
    inputs = {
        "a": torch.randn(2, 3),
        "b": torch.randn(2, 2),
        "c": torch.ones(2, 1, dtype=torch.int32),
    }
    out, _ = net(inputs)
    concat = torch.cat([inputs["a"], inputs["b"], inputs["c"].float()], -1)
    torch.testing.assert_close(out, _manual_mlp(net, concat))


def test_nest_concat_reports_clashing_shapes():
    spec = {"image": TensorSpec((3, 8, 8)), "speed": TensorSpec((2,))}
    with pytest.raises(ValueError, match=r"image: \(3, 8, 8\).*speed: \(2,\)"):
        EncodingNetwork(spec, fc_layer_params=(4,))
    assert NestConcat().output_spec((TensorSpec((2,)), TensorSpec((5,)))) == TensorSpec((7,))
    masked = NestConcat(nest_mask=(True, False))
    torch.testing.assert_close(masked((torch.ones(1, 2), torch.zeros(1, 5))), torch.ones(1, 2))


def test_errors_for_bad_input_shapes_and_combiner():
    with pytest.raises(ValueError, match=r"must be \[N\] or \[N, D\]"):
        EncodingNetwork(TensorSpec((2, 3, 4)), fc_layer_params=(4,))
    with pytest.raises(ValueError, match=r"\[C, H, W\]"):
        EncodingNetwork(TensorSpec((4,)), conv_layer_params=((2, 3, 1),))
    with pytest.raises(ValueError, match="remove the combiner"):
        EncodingNetwork(TensorSpec((4,)), preprocessing_combiner=NestConcat())


def test_conv_layers_match_manual_convolution():
    net = EncodingNetwork(
        TensorSpec((3, 10, 10)), conv_layer_params=((4, 3, 2), (5, 3, 1, 1)), fc_layer_params=(7,)
    )
    x = torch.randn(2, 3, 10, 10)
    out, _ = net(x)
    c1, c2 = net._conv_layers
    z = torch.relu(F.conv2d(x, c1.weight, c1.bias, stride=2))
    z = torch.relu(F.conv2d(z, c2.weight, c2.bias, stride=1, padding=1)).flatten(1)
    assert z.shape == (2, 5 * 4 * 4)
    torch.testing.assert_close(out, _manual_mlp(net, z))
    assert net.output_spec == TensorSpec((7,))


def test_preprocessors_nest_with_none_and_network_leaves():
    spec = {"image": TensorSpec((1, 6, 6)), "speed": TensorSpec((2,))}
    image_encoder = EncodingNetwork(
        spec["image"], conv_layer_params=((2, 3, 3),), fc_layer_params=(3,)
    )
    net = EncodingNetwork(
        spec, input_preprocessors={"image": image_encoder, "speed": None}, fc_layer_params=(4,)
    )
    inputs = {"image": torch.randn(2, 1, 6, 6), "speed": torch.randn(2, 2)}
    out, _ = net(inputs)
    concat = torch.cat([image_encoder(inputs["image"])[0], inputs["speed"]], -1)
    torch.testing.assert_close(out, _manual_mlp(net, concat))
    # The preprocessor's parameters belong to the network (so they are trained).
    assert any(p is image_encoder._fc_layers[0].weight for p in net.parameters())


def test_last_layer_options_and_custom_initializer():
    net = EncodingNetwork(
        TensorSpec((4,)),
        fc_layer_params=(5,),
        kernel_initializer=torch.nn.init.ones_,
        last_layer_size=2,
        last_activation=torch.tanh,
        last_kernel_initializer=torch.nn.init.zeros_,
        last_use_bias=False,
    )
    hidden, last = net._fc_layers
    assert torch.all(hidden.weight == 1) and last.bias is None
    out, _ = net(torch.randn(3, 4))
    torch.testing.assert_close(out, torch.zeros(3, 2))


def test_fc_batch_norm_and_gradients():
    net = EncodingNetwork(TensorSpec((4,)), fc_layer_params=(8,), use_fc_bn=True, last_layer_size=1)
    out, _ = net(torch.randn(16, 4))
    out.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())
    net.eval()
    assert net(torch.randn(1, 4))[0].shape == (1, 1)


def test_copy_builds_independent_parameters():
    net = EncodingNetwork(TensorSpec((4,)), fc_layer_params=(8,), name="enc")
    twin = net.copy(name="twin")
    assert twin.name == "twin" and net.name == "enc"
    assert isinstance(twin, EncodingNetwork)
    for p, q in zip(net.parameters(), twin.parameters()):
        assert p.shape == q.shape and p.data_ptr() != q.data_ptr()
    assert not torch.equal(net._fc_layers[0].weight, twin._fc_layers[0].weight)
    assert net.saved_args["fc_layer_params"] == (8,)
