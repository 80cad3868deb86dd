"""ActorDistributionNetwork: discrete, continuous and nested actions; gradients; config."""

import pytest
import torch
import torch.distributions as td

import alf
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import dist_utils

OBS = TensorSpec((4,))
DISCRETE = BoundedTensorSpec((), torch.int64, 0, 1)
CONTINUOUS = BoundedTensorSpec((3,), torch.float32, -2.0, 2.0)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield
    alf.reset_configs()


def _all_parameters_get_gradients(net, loss):
    net.zero_grad()
    loss.backward()
    return all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())


def test_discrete_actor():
    net = ActorDistributionNetwork(OBS, DISCRETE, fc_layer_params=(16, 16))
    dist, state = net(torch.randn(7, 4))
    assert isinstance(dist, td.Categorical) and state == ()
    assert dist.batch_shape == (7,) and dist.sample().shape == (7,)
    loss = -(dist.log_prob(torch.ones(7)) + dist_utils.entropy(dist)).sum()
    assert _all_parameters_get_gradients(net, loss)
    assert set(net.output_spec.input_params_spec) == {"logits"}


def test_continuous_actor():
    net = ActorDistributionNetwork(OBS, CONTINUOUS, fc_layer_params=(16,))
    dist, _ = net(torch.randn(5, 4))
    action = dist.sample()
    assert action.shape == (5, 3)
    log_prob = dist_utils.compute_log_probability(dist, action)
    assert log_prob.shape == (5,)
    assert _all_parameters_get_gradients(net, -(log_prob + dist_utils.compute_entropy(dist)).sum())


def test_nested_action_spec_gives_nested_distributions():
    action_spec = {"move": CONTINUOUS, "jump": DISCRETE}
    net = ActorDistributionNetwork(OBS, action_spec, fc_layer_params=(8,))
    dists, _ = net(torch.randn(3, 4))
    assert set(dists) == {"move", "jump"}
    actions = dist_utils.sample_action_distribution(dists)
    assert actions["move"].shape == (3, 3) and actions["jump"].shape == (3,)
    total = dist_utils.compute_log_probability(dists, actions)
    expected = dists["move"].log_prob(actions["move"]) + dists["jump"].log_prob(actions["jump"])
    torch.testing.assert_close(total, expected)


def test_mode_is_deterministic():
    net = ActorDistributionNetwork(OBS, CONTINUOUS, fc_layer_params=(8,))
    obs = torch.randn(4, 4)
    torch.testing.assert_close(dist_utils.get_mode(net(obs)[0]), dist_utils.get_mode(net(obs)[0]))


def test_projection_is_configurable():
    alf.config("NormalProjectionNetwork", state_dependent_std=True)
    net = ActorDistributionNetwork(OBS, CONTINUOUS, fc_layer_params=(8,))
    assert net._projection_net._std_projection_layer is not None
    alf.reset_configs()
    net = ActorDistributionNetwork(OBS, CONTINUOUS, fc_layer_params=(8,))
    assert net._projection_net._std_projection_layer is None


def test_copy_gives_independent_parameters_of_the_same_shapes():
    net = ActorDistributionNetwork(OBS, DISCRETE, fc_layer_params=(8, 8))
    twin = net.copy()
    shapes = [p.shape for p in net.parameters()]
    assert shapes == [p.shape for p in twin.parameters()]
    with torch.no_grad():
        for p in twin.parameters():
            p.add_(1.0)
    assert not any(torch.equal(p, q) for p, q in zip(net.parameters(), twin.parameters()))


def test_output_spec_dry_run_keeps_mode_and_batch_norm_statistics():
    net = ActorDistributionNetwork(OBS, CONTINUOUS, fc_layer_params=(8,), use_fc_bn=True)
    bn = net._encoding_net._fc_layers[0]._bn
    before = bn.running_mean.clone()
    spec = net.output_spec
    assert net.training and bn.training
    torch.testing.assert_close(bn.running_mean, before)
    assert spec.input_params_spec["loc"] == TensorSpec((3,))
