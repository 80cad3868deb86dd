"""ValueNetwork: shapes, values, gradients and copies."""

import pytest
import torch
import torch.nn.functional as F

from alf.networks.value_networks import ValueNetwork
from alf.tensor_specs import TensorSpec


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_scalar_value_shape_and_number():
    net = ValueNetwork(TensorSpec((4,)), fc_layer_params=(16, 16))
    x = torch.randn(9, 4)
    value, state = net(x)
    assert value.shape == (9,) and state == ()
    h = x
    for layer in net._fc_layers[:2]:
        h = torch.relu(F.linear(h, layer.weight, layer.bias))
    last = net._fc_layers[2]
    torch.testing.assert_close(value, F.linear(h, last.weight, last.bias).squeeze(-1))
    assert net.output_spec == TensorSpec(())
    # The value layer starts small (uniform in +-0.03).
    assert last.weight.abs().max() <= 0.03


def test_vector_value_and_nested_observation():
    spec = {"a": TensorSpec((2,)), "b": TensorSpec((3,))}
    net = ValueNetwork(spec, output_tensor_spec=TensorSpec((2,)), fc_layer_params=(8,))
    value, _ = net({"a": torch.randn(5, 2), "b": torch.randn(5, 3)})
    assert value.shape == (5, 2)


def test_gradients_flow_to_all_parameters():
    net = ValueNetwork(TensorSpec((4,)), fc_layer_params=(8, 8))
    value, _ = net(torch.randn(32, 4))
    ((value - 1.0) ** 2).mean().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())


def test_copy_gives_independent_parameters_of_the_same_shapes():
    net = ValueNetwork(TensorSpec((4,)), fc_layer_params=(8,), name="critic")
    twin = net.copy(name="target_critic")
    assert twin.name == "target_critic" and isinstance(twin, ValueNetwork)
    pairs = list(zip(net.parameters(), twin.parameters()))
    assert len(pairs) == len(list(net.parameters())) == 4
    for p, q in pairs:
        assert p.shape == q.shape and p is not q
    with torch.no_grad():
        next(twin.parameters()).add_(1.0)
    assert not torch.equal(next(net.parameters()), next(twin.parameters()))


def test_conv_value_network():
    net = ValueNetwork(
        TensorSpec((3, 12, 12)), conv_layer_params=((4, 3, 2),), fc_layer_params=(8,)
    )
    assert net(torch.randn(2, 3, 12, 12))[0].shape == (2,)
