"""Projection networks: closed-form log-probabilities, bounds, modes and spec round trips."""

import math

import pytest
import torch
import torch.distributions as td

from alf.networks.projection_networks import (
    CategoricalProjectionNetwork,
    NormalProjectionNetwork,
)
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import dist_utils


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _set_mean_bias(net, mean):
    with torch.no_grad():
        net._means_projection_layer.weight.zero_()
        net._means_projection_layer.bias.copy_(torch.tensor(mean))


def _normal_log_prob(a, mu, sigma):
    return sum(
        -((ai - mi) ** 2) / (2 * si**2) - math.log(si) - 0.5 * math.log(2 * math.pi)
        for ai, mi, si in zip(a, mu, sigma)
    )


def test_normal_log_prob_matches_closed_form():
    spec = BoundedTensorSpec((2,), torch.float32, -1.0, 1.0)
    net = NormalProjectionNetwork(4, spec, squash_mean=False)
    mu, sigma = [0.3, -0.7], [0.5, 2.0]
    _set_mean_bias(net, mu)
    with torch.no_grad():  # softplus(p) = sigma
        net._std.copy_(torch.log(torch.expm1(torch.tensor(sigma))))
    dist, _ = net(torch.randn(3, 4))
    a = [0.1, 0.4]
    log_prob = dist.log_prob(torch.tensor([a] * 3))
    assert log_prob.shape == (3,)
    assert log_prob.tolist() == pytest.approx([_normal_log_prob(a, mu, sigma)] * 3, rel=1e-5)
    torch.testing.assert_close(dist_utils.get_mode(dist), torch.tensor([mu] * 3))
    expected_entropy = sum(0.5 * math.log(2 * math.pi * math.e * s**2) for s in sigma)
    assert dist_utils.entropy(dist).tolist() == pytest.approx([expected_entropy] * 3, rel=1e-5)


def test_state_dependent_std_and_std_bias():
    spec = TensorSpec((3,))
    net = NormalProjectionNetwork(
        5, spec, squash_mean=False, state_dependent_std=True, std_bias_initializer_value=1.0
    )
    with torch.no_grad():
        net._std_projection_layer.weight.zero_()
    dist, _ = net(torch.randn(2, 5))
    expected = torch.nn.functional.softplus(torch.tensor(1.0)).item()
    torch.testing.assert_close(dist.stddev, torch.full((2, 3), expected))
    assert not any(name == "_std" for name, _ in net.named_parameters())


def test_squash_mean_keeps_mean_inside_bounds():
    spec = BoundedTensorSpec((2,), torch.float32, [0.0, -2.0], [1.0, 2.0])
    net = NormalProjectionNetwork(4, spec)
    _set_mean_bias(net, [50.0, -50.0])
    dist, _ = net(torch.randn(3, 4))
    torch.testing.assert_close(dist.mean, torch.tensor([[1.0, -2.0]] * 3))
    _set_mean_bias(net, [0.0, 0.0])
    torch.testing.assert_close(net(torch.randn(1, 4))[0].mean, torch.tensor([[0.5, 0.0]]))


def test_scaled_distribution_samples_inside_bounds():
    spec = BoundedTensorSpec((2,), torch.float32, [0.0, -2.0], [1.0, 2.0])
    net = NormalProjectionNetwork(4, spec, scale_distribution=True, std_bias_initializer_value=3.0)
    dist, _ = net(torch.randn(1000, 4))
    y = dist.sample()
    assert torch.all(y >= torch.tensor([0.0, -2.0])) and torch.all(y <= torch.tensor([1.0, 2.0]))
    # Actions exactly on the bounds (as stored in a replay buffer) stay finite.
    assert torch.isfinite(dist.log_prob(torch.tensor([[1.0, -2.0]]).expand(1000, 2))).all()
    scale = torch.tensor([0.5, 2.0])
    mode = dist_utils.get_mode(dist)
    torch.testing.assert_close(
        mode, torch.tensor([0.5, 0.0]) + scale * torch.tanh(dist.base_dist.mean)
    )
    torch.testing.assert_close(dist_utils.get_mode(dist), mode)


def test_scaled_distribution_log_prob_is_the_change_of_variables():
    spec = BoundedTensorSpec((2,), torch.float32, [0.0, -2.0], [1.0, 2.0])
    net = NormalProjectionNetwork(4, spec, scale_distribution=True)
    dist, _ = net(torch.randn(1000, 4))
    # log p(y) = log N(x) - sum log(scale * (1 - tanh(x)^2)),  y = loc + scale * tanh(x).
    x = dist.base_dist.sample().double()
    loc, scale = torch.tensor([0.5, 0.0]).double(), torch.tensor([0.5, 2.0]).double()
    y = loc + scale * torch.tanh(x)
    base = td.Normal(dist.base_dist.mean.double(), dist.base_dist.stddev.double())
    expected = (base.log_prob(x) - torch.log(scale * (1 - torch.tanh(x) ** 2))).sum(-1)
    torch.testing.assert_close(dist.log_prob(y.float()).double(), expected, rtol=1e-3, atol=1e-3)


def test_scaled_distribution_entropy_estimate():
    spec = BoundedTensorSpec((1,), torch.float32, -1.0, 1.0)
    net = NormalProjectionNetwork(2, spec, scale_distribution=True)
    dist, _ = net(torch.zeros(20000, 2))
    estimate = dist_utils.entropy(dist).mean()
    monte_carlo = -dist.log_prob(dist.sample()).mean()
    assert estimate.item() == pytest.approx(monte_carlo.item(), abs=0.02)


def test_scalar_continuous_action():
    net = NormalProjectionNetwork(3, BoundedTensorSpec((), torch.float32, -1.0, 1.0))
    dist, _ = net(torch.randn(4, 3))
    assert dist.sample().shape == (4,) and dist.log_prob(torch.zeros(4)).shape == (4,)


def test_categorical_with_minimum_samples_in_range():
    spec = BoundedTensorSpec((), torch.int64, 1, 3)
    net = CategoricalProjectionNetwork(5, spec)
    dist, _ = net(torch.randn(4000, 5))
    samples = dist.sample()
    assert samples.min().item() == 1 and samples.max().item() == 3
    probs = torch.stack([dist.log_prob(torch.full((4000,), v)).exp() for v in (1, 2, 3)], -1)
    torch.testing.assert_close(probs.sum(-1), torch.ones(4000))
    mode = dist_utils.get_mode(dist)
    torch.testing.assert_close(mode, dist.logits.argmax(-1) + 1)
    torch.testing.assert_close(dist_utils.get_mode(dist), mode)


def test_categorical_probabilities_and_sampling_frequencies():
    net = CategoricalProjectionNetwork(2, BoundedTensorSpec((), torch.int64, 0, 2))
    logits = torch.tensor([1.0, 0.0, -1.0])
    with torch.no_grad():
        net._projection_layer.weight.zero_()
        net._projection_layer.bias.copy_(logits)
    dist, _ = net(torch.zeros(50000, 2))
    expected = torch.softmax(logits, 0)
    torch.testing.assert_close(dist.log_prob(torch.zeros(50000)).exp()[0], expected[0])
    frequencies = torch.bincount(dist.sample(), minlength=3).float() / 50000
    torch.testing.assert_close(frequencies, expected, atol=0.01, rtol=0)


def test_vector_discrete_action_is_independent():
    spec = BoundedTensorSpec((2,), torch.int64, 0, 3)
    dist, _ = CategoricalProjectionNetwork(4, spec)(torch.randn(6, 4))
    assert isinstance(dist, td.Independent)
    assert dist.sample().shape == (6, 2) and dist.log_prob(torch.zeros(6, 2)).shape == (6,)
    with pytest.raises(ValueError, match="same number"):
        CategoricalProjectionNetwork(4, BoundedTensorSpec((2,), torch.int64, 0, [1, 2]))


@pytest.mark.parametrize(
    "net",
    [
        lambda: NormalProjectionNetwork(3, BoundedTensorSpec((2,), torch.float32, -1, 1)),
        lambda: NormalProjectionNetwork(
            3, BoundedTensorSpec((2,), torch.float32, -1, 1), scale_distribution=True
        ),
        lambda: CategoricalProjectionNetwork(3, BoundedTensorSpec((), torch.int64, 2, 4)),
    ],
)
def test_distribution_params_round_trip(net):
    dist, _ = net()(torch.randn(5, 3))
    spec = dist_utils.extract_spec({"d": dist})
    params = dist_utils.distributions_to_params({"d": dist})
    rebuilt = dist_utils.params_to_distributions(params, spec)["d"]
    action = dist.sample()
    torch.testing.assert_close(rebuilt.log_prob(action), dist.log_prob(action))


def test_kernel_initializer_replaces_the_gain_init():
    spec = BoundedTensorSpec((3,), minimum=-1.0, maximum=1.0)
    torch.manual_seed(0)
    default = NormalProjectionNetwork(256, spec, state_dependent_std=True)
    custom = NormalProjectionNetwork(
        256,
        spec,
        state_dependent_std=True,
        std_bias_initializer_value=-1.0,
        kernel_initializer=lambda w: torch.nn.init.constant_(w, 0.5),
    )
    for layer in (custom._means_projection_layer, custom._std_projection_layer):
        assert torch.all(layer.weight == 0.5)
    assert torch.all(custom._std_projection_layer.bias == -1.0)
    # the default: variance scaling with gain 0.3 over fan-in 256 (std ~ 0.3 / 16)
    assert default._means_projection_layer.weight.std().item() < 0.05
