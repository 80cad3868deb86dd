"""ActorNetwork: actions by hand inside the bounds, vector/matrix actions, bad specs, copies."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from alf.networks.actor_networks import ActorNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_action_is_the_squashed_mlp_output_scaled_to_the_bounds():
    spec = BoundedTensorSpec((2,), torch.float32, minimum=[-1.0, 0.0], maximum=[3.0, 1.0])
    net = ActorNetwork(TensorSpec((4,)), spec, fc_layer_params=(16,))
    x = torch.randn(7, 4)
    action, state = net(x)
    assert action.shape == (7, 2) and state == ()
    hidden, last = net._fc_layers
    z = F.linear(torch.relu(F.linear(x, hidden.weight, hidden.bias)), last.weight, last.bias)
    expected = torch.tensor([1.0, 0.5]) + torch.tensor([2.0, 0.5]) * torch.tanh(z)
    torch.testing.assert_close(action, expected)
    assert last.weight.abs().max() <= 0.003
    assert net.output_spec == TensorSpec((2,))


def test_actions_stay_in_bounds_for_large_inputs_and_reach_them():
    spec = BoundedTensorSpec((3,), torch.float32, minimum=-2.0, maximum=2.0)
    net = ActorNetwork(TensorSpec((1,)), spec, fc_layer_params=(8,))
    with torch.no_grad():
        net._fc_layers[-1].weight.fill_(10.0)
    action, _ = net(torch.tensor([[1e4], [-1e4]]).abs())
    assert torch.all(action <= 2.0) and torch.all(action >= -2.0)
    assert torch.allclose(action, torch.full_like(action, 2.0))


def test_matrix_action_shape():
    spec = BoundedTensorSpec((2, 3), torch.float32, minimum=-1.0, maximum=1.0)
    net = ActorNetwork(TensorSpec((5,)), spec, fc_layer_params=(8,))
    action, _ = net(torch.randn(4, 5))
    assert action.shape == (4, 2, 3)


@pytest.mark.parametrize(
    "spec",
    [
        BoundedTensorSpec((), torch.int64, 0, 3),  # discrete
        BoundedTensorSpec((2,), torch.float32, minimum=-np.inf, maximum=1.0),  # unbounded
        TensorSpec((2,)),  # no bounds
    ],
)
def test_rejects_discrete_or_unbounded_specs(spec):
    with pytest.raises(ValueError, match="ActorNetwork"):
        ActorNetwork(TensorSpec((2,)), spec)


def test_copy_is_independent_and_gradients_reach_all_layers():
    spec = BoundedTensorSpec((2,), torch.float32, minimum=-1.0, maximum=1.0)
    net = ActorNetwork(TensorSpec((3,)), spec, fc_layer_params=(8, 8))
    twin = net.copy(name="target_actor")
    assert isinstance(twin, ActorNetwork) and twin.name == "target_actor"
    for p, q in zip(net.parameters(), twin.parameters()):
        assert p.shape == q.shape and p is not q
    net(torch.randn(16, 3))[0].sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())
