"""QNetwork: Q values per action by hand, shifted action specs, bad specs, copies."""

import pytest
import torch
import torch.nn.functional as F

from alf.networks.q_networks import QNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_q_values_match_a_hand_written_mlp():
    action_spec = BoundedTensorSpec((), torch.int64, 0, 2)
    net = QNetwork(TensorSpec((4,)), action_spec, fc_layer_params=(16, 8))
    x = torch.randn(5, 4)
    q, state = net(x)
    assert q.shape == (5, 3) and state == ()
    h = x
    for layer in net._fc_layers[:2]:
        h = torch.relu(F.linear(h, layer.weight, layer.bias))
    last = net._fc_layers[2]
    torch.testing.assert_close(q, F.linear(h, last.weight, last.bias))
    assert last.weight.abs().max() <= 0.03
    assert net.output_spec == TensorSpec((3,)) and net.num_actions == 3


def test_nonzero_minimum_maps_columns_to_actions():
    action_spec = BoundedTensorSpec((), torch.int64, -2, 1)  # actions -2, -1, 0, 1
    net = QNetwork(TensorSpec((2,)), action_spec, fc_layer_params=(8,))
    assert net.num_actions == 4
    actions = torch.tensor([-2, 0, 1])
    index = net.action_index(actions)
    assert index.tolist() == [0, 2, 3]
    assert torch.equal(net.index_action(index), actions)
    q, _ = net(torch.randn(3, 2))
    assert q.shape == (3, 4)


@pytest.mark.parametrize(
    "spec",
    [
        BoundedTensorSpec((2,), torch.int64, 0, 3),  # vector action
        BoundedTensorSpec((), torch.float32, -1.0, 1.0),  # continuous
        TensorSpec((), torch.int64),  # unbounded
    ],
)
def test_rejects_non_scalar_discrete_specs(spec):
    with pytest.raises(ValueError, match="scalar discrete"):
        QNetwork(TensorSpec((2,)), spec)


def test_nested_observation_and_gradients():
    spec = {"a": TensorSpec((2,)), "b": TensorSpec((3,))}
    net = QNetwork(spec, BoundedTensorSpec((), torch.int64, 0, 1), fc_layer_params=(8,))
    q, _ = net({"a": torch.randn(6, 2), "b": torch.randn(6, 3)})
    assert q.shape == (6, 2)
    q.square().mean().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())


def test_copy_is_an_independent_qnetwork():
    net = QNetwork(TensorSpec((3,)), BoundedTensorSpec((), torch.int64, 0, 1), fc_layer_params=(8,))
    twin = net.copy(name="target_q")
    assert isinstance(twin, QNetwork) and twin.name == "target_q"
    for p, q in zip(net.parameters(), twin.parameters()):
        assert p.shape == q.shape and p is not q
