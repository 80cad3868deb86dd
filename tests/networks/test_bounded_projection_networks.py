"""ALF's other projection networks (StableNormal, Beta, Truncated, Cauchy) and the ALF
arguments of Normal / Categorical: parameters and log-probabilities against hand
computations with torch's own distributions, bounds of samples, and bad arguments."""

import functools
import math

import pytest
import torch
import torch.distributions as td
import torch.nn.functional as F

import alf.layers
from alf.algorithms.sac_algorithm import _sample_with_log_prob
from alf.networks import ActorDistributionNetwork
from alf.networks.projection_networks import (
    BetaProjectionNetwork,
    CategoricalProjectionNetwork,
    CauchyProjectionNetwork,
    NormalProjectionNetwork,
    StableNormalProjectionNetwork,
    TruncatedProjectionNetwork,
)
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import dist_utils

SPEC = BoundedTensorSpec((2,), torch.float32, [-2.0, 0.0], [1.0, 0.5])
LOW, HIGH = torch.tensor([-2.0, 0.0]), torch.tensor([1.0, 0.5])
X = torch.tensor([[0.5, -1.0, 2.0], [0.0, 0.3, -0.4]])


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _set(layer, weight, bias):
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(weight))
        layer.bias.copy_(torch.as_tensor(bias))


def _linear(weight, bias, x=X):
    return x @ torch.as_tensor(weight).T + torch.as_tensor(bias)


W1, B1 = [[0.2, -0.1, 0.3], [0.5, 0.4, -0.2]], [0.1, -0.3]
W2, B2 = [[-0.3, 0.2, 0.1], [0.1, 0.0, 0.6]], [0.4, -1.0]
W4 = W1 + W2  # the Beta layer: [c1 (2 dims), c0 (2 dims)]
B4 = B1 + B2


# -- StableNormalProjectionNetwork ------------------------------------------------------


def _stable_normal(**kwargs):
    args = dict(squash_mean=False, state_dependent_std=True, min_std=1e-3, max_std=10.0)
    net = StableNormalProjectionNetwork(3, SPEC, **dict(args, **kwargs))
    _set(net._means_projection_layer, W1, B1)
    _set(net._std_projection_layer, W2, B2)
    std = 1e-3 + 1.0 / (F.softplus(_linear(W2, B2)) + 1.0 / (10.0 - 1e-3))
    return net, _linear(W1, B1) * std, std


def test_stable_normal_parameters_by_hand():
    net, mean, std = _stable_normal()
    dist, _ = net(X)
    torch.testing.assert_close(dist.base_dist.loc, mean)
    torch.testing.assert_close(dist.base_dist.scale, std)
    action = torch.tensor([[0.2, 0.1], [-1.5, 0.4]])
    expected = td.Normal(mean, std).log_prob(action).sum(-1)
    torch.testing.assert_close(dist_utils.compute_log_probability(dist, action), expected)


def test_stable_normal_scaled_distribution_log_prob_and_bounds():
    net, mean, std = _stable_normal(scale_distribution=True)
    dist, _ = net(X)
    action = torch.tensor([[0.5, 0.1], [-1.9, 0.45]])
    centre, half = (HIGH + LOW) / 2, (HIGH - LOW) / 2
    u = torch.atanh((action - centre) / half)
    # change of variables: a = centre + half * tanh(u)
    log_det = torch.log(half * (1 - torch.tanh(u) ** 2))
    expected = (td.Normal(mean, std).log_prob(u) - log_det).sum(-1)
    torch.testing.assert_close(dist.log_prob(action), expected, rtol=1e-4, atol=1e-4)
    samples = dist.sample((2000,))
    assert (samples >= LOW).all() and (samples <= HIGH).all()


def test_stable_normal_squashed_mean():
    net, mean, _ = _stable_normal(squash_mean=True)
    dist, _ = net(X)
    expected = (HIGH + LOW) / 2 + (HIGH - LOW) / 2 * torch.tanh(mean)
    torch.testing.assert_close(dist.base_dist.loc, expected)


@pytest.mark.parametrize(
    "init_std, min_std, max_std, transform",
    [(1.0, 0.0, None, "softplus"), (0.3, 1e-3, 10.0, "exp"), (2.0, 0.5, 3.0, "softplus")],
)
@pytest.mark.parametrize("state_dependent_std", [False, True])
def test_stable_normal_starts_at_init_std(
    init_std, min_std, max_std, transform, state_dependent_std
):
    net = StableNormalProjectionNetwork(
        3,
        SPEC,
        init_std=init_std,
        min_std=min_std,
        max_std=max_std,
        inverse_std_transform=transform,
        state_dependent_std=state_dependent_std,
    )
    dist, _ = net(torch.randn(5, 3))
    torch.testing.assert_close(dist.stddev, torch.full((5, 2), init_std), rtol=1e-4, atol=0)


def test_state_independent_std_is_a_learned_parameter():
    net = StableNormalProjectionNetwork(3, SPEC, state_dependent_std=False, init_std=0.5)
    assert net._std_projection_layer is None
    assert any(p is net._std for p in net.parameters()) and net._std.shape == (2,)
    with torch.no_grad():
        net._std.copy_(torch.tensor([0.2, -0.4]))
    dist, _ = net(X)
    # the std does not depend on the input
    torch.testing.assert_close(
        dist.stddev, 1.0 / F.softplus(torch.tensor([0.2, -0.4])).expand(2, 2)
    )
    dist.log_prob(torch.zeros(2, 2)).sum().backward()
    assert net._std.grad is not None and net._std.grad.abs().sum() > 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(init_std=0.1, min_std=0.2), "init_std must exceed min_std"),
        (dict(init_std=5.0, max_std=4.0), "init_std must be below max_std"),
        (dict(inverse_std_transform="relu"), "inverse_std_transform"),
        (dict(parallelism=0), "parallelism"),
    ],
)
def test_stable_normal_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        StableNormalProjectionNetwork(3, SPEC, **kwargs)
    assert "\n" not in str(info.value)


# -- NormalProjectionNetwork: parallelism, mean_transform -------------------------------


def test_normal_mean_transform_replaces_the_squash():
    net = NormalProjectionNetwork(3, SPEC, mean_transform=lambda m: 2.0 * m + 1.0)
    _set(net._means_projection_layer, W1, B1)
    dist, _ = net(X)
    torch.testing.assert_close(dist.base_dist.loc, 2.0 * _linear(W1, B1) + 1.0)


@pytest.mark.parametrize("state_dependent_std", [False, True])
def test_normal_parallelism_gives_independent_replicas(state_dependent_std):
    net = NormalProjectionNetwork(
        3, SPEC, parallelism=3, squash_mean=False, state_dependent_std=state_dependent_std
    )
    weights = [torch.tensor(W1) * (i + 1) for i in range(3)]
    biases = [torch.tensor(B1) - i for i in range(3)]
    _set(net._means_projection_layer, torch.stack(weights), torch.stack(biases))
    dist, _ = net(X)
    assert dist.batch_shape == (2, 3) and dist.event_shape == (2,)
    for i in range(3):
        torch.testing.assert_close(dist.base_dist.loc[:, i], _linear(weights[i], biases[i]))
    action = torch.randn(2, 3, 2)
    expected = td.Normal(dist.base_dist.loc, dist.base_dist.scale).log_prob(action).sum(-1)
    torch.testing.assert_close(dist.log_prob(action), expected)
    parallel = NormalProjectionNetwork(3, SPEC).make_parallel(4)
    assert parallel.parallelism == 4 and parallel(X)[0].batch_shape == (2, 4)
    with pytest.raises(ValueError, match="already parallel"):
        parallel.make_parallel(2)


def test_parallelism_needs_a_vector_action():
    spec = BoundedTensorSpec((2, 2), torch.float32, -1.0, 1.0)
    with pytest.raises(ValueError, match="parallelism needs a 1-D action spec"):
        NormalProjectionNetwork(3, spec, parallelism=2)


# -- CategoricalProjectionNetwork: fc_ctor, optimizer arguments -------------------------


def test_categorical_fc_ctor_and_opt_args():
    calls = []

    def fc_ctor(*args, **kwargs):
        calls.append((args, kwargs))
        return alf.layers.FC(*args, **kwargs)

    spec = BoundedTensorSpec((), torch.int64, 0, 1)
    net = CategoricalProjectionNetwork(
        3,
        spec,
        fc_ctor=fc_ctor,
        logits_init_output_factor=0.5,
        weight_opt_args=dict(lr_scale=0.1),
        bias_opt_args=dict(weight_decay=0.0),
    )
    assert calls == [
        (
            (3, 2),
            dict(
                kernel_init_gain=0.5,
                weight_opt_args=dict(lr_scale=0.1),
                bias_opt_args=dict(weight_decay=0.0),
            ),
        )
    ]
    assert isinstance(net._projection_layer, alf.layers.FC)
    assert net._projection_layer.weight.opt_args == dict(lr_scale=0.1)
    assert net._projection_layer.bias.opt_args == dict(weight_decay=0.0)
    _set(net._projection_layer, W1, B1)
    dist, _ = net(X)
    torch.testing.assert_close(dist.logits, torch.log_softmax(_linear(W1, B1), -1))
    # without fc_ctor the optimizer arguments land on the default layer's parameters
    plain = CategoricalProjectionNetwork(3, spec, weight_opt_args=dict(lr_scale=0.1))
    assert plain._projection_layer.weight.opt_args == dict(lr_scale=0.1)
    assert not hasattr(plain._projection_layer.bias, "opt_args")


# -- BetaProjectionNetwork --------------------------------------------------------------


def _beta(**kwargs):
    net = BetaProjectionNetwork(3, SPEC, **kwargs)
    _set(net._concentration_projection_layer, W4, B4)
    c = F.softplus(_linear(W4, B4)) + kwargs.get("min_concentration", 0.0)
    return net, c[:, :2], c[:, 2:]


def test_beta_parameters_log_prob_and_entropy_by_hand():
    net, c1, c0 = _beta(min_concentration=1.0)
    dist, _ = net(X)
    base = dist.base_dist.base_dist
    torch.testing.assert_close(base.concentration1, c1)
    torch.testing.assert_close(base.concentration0, c0)
    action = torch.tensor([[0.5, 0.1], [-1.9, 0.45]])
    unit = (action - LOW) / (HIGH - LOW)
    expected = (td.Beta(c1, c0).log_prob(unit) - torch.log(HIGH - LOW)).sum(-1)
    torch.testing.assert_close(dist_utils.compute_log_probability(dist, action), expected)
    entropy = (td.Beta(c1, c0).entropy() + torch.log(HIGH - LOW)).sum(-1)
    torch.testing.assert_close(dist_utils.compute_entropy(dist), entropy)
    mode = LOW + (HIGH - LOW) * (c1 - 1) / (c1 + c0 - 2)
    torch.testing.assert_close(dist_utils.get_mode(dist), mode)


def test_beta_default_is_uniform_and_samples_stay_inside():
    net = BetaProjectionNetwork(3, SPEC)
    dist, _ = net(torch.randn(4, 3))
    log_uniform = -torch.log(HIGH - LOW).sum()
    torch.testing.assert_close(dist.log_prob(torch.tensor([[0.0, 0.2]] * 4)), log_uniform.expand(4))
    samples = dist.rsample((5000,))
    assert (samples >= LOW).all() and (samples <= HIGH).all()
    # uniform: the mean of the samples is the middle of the bounds
    torch.testing.assert_close(samples.mean((0, 1)), (LOW + HIGH) / 2, atol=0.03, rtol=0)


def test_beta_on_unit_bounds_is_not_transformed():
    spec = BoundedTensorSpec((2,), torch.float32, 0.0, 1.0)
    dist, _ = BetaProjectionNetwork(3, spec)(X)
    assert type(dist) is dist_utils.DiagMultivariateBeta


def test_beta_grad_clip_limits_each_rows_gradient():
    net, c1, c0 = _beta(grad_clip=0.01)
    x, action = X[:1], torch.tensor([[0.9, 0.01]])
    dist, _ = net(x)
    (-dist.log_prob(action).sum()).backward()
    # the gradient at the concentrations, unclipped, computed on leaves
    leaf = torch.cat([c1[:1], c0[:1]], -1).detach().requires_grad_()
    unit = (action - LOW) / (HIGH - LOW)
    (-td.Beta(leaf[:, :2], leaf[:, 2:]).log_prob(unit).sum()).backward()
    grad = leaf.grad
    assert grad.norm() > 0.01  # so the clip acts
    clipped = grad * 0.01 / grad.norm()
    expected_bias_grad = (torch.sigmoid(_linear(W4, B4, x)) * clipped)[0]
    torch.testing.assert_close(net._concentration_projection_layer.bias.grad, expected_bias_grad)


@pytest.mark.parametrize(
    "kwargs, spec, match",
    [
        (dict(min_concentration=-1.0), SPEC, "min_concentration"),
        (dict(grad_clip=0.0), SPEC, "grad_clip"),
        ({}, TensorSpec((2,)), "bounded action spec"),
        ({}, BoundedTensorSpec((2,), torch.float32, -math.inf, 1.0), "finite action bounds"),
    ],
)
def test_beta_bad_arguments(kwargs, spec, match):
    with pytest.raises(ValueError, match=match) as info:
        BetaProjectionNetwork(3, spec, **kwargs)
    assert "\n" not in str(info.value)


# -- TruncatedProjectionNetwork ---------------------------------------------------------


def test_truncated_parameters_and_log_prob_by_hand():
    net = TruncatedProjectionNetwork(
        3, SPEC, state_dependent_scale=True, min_scale=0.2, max_scale=0.6
    )
    _set(net._loc_projection_layer, W1, B1)
    _set(net._scale_projection_layer, W2, B2)
    loc = (HIGH + LOW) / 2 + (HIGH - LOW) / 2 * torch.tanh(_linear(W1, B1))
    scale = F.softplus(_linear(W2, B2)).clamp(0.2, 0.6)
    dist, _ = net(X)
    assert type(dist) is dist_utils.TruncatedNormal
    torch.testing.assert_close(dist.loc, loc)
    torch.testing.assert_close(dist.scale, scale)
    action = torch.tensor([[0.5, 0.1], [-1.9, 0.45]])
    normal = td.Normal(loc, scale)
    mass = normal.cdf(HIGH) - normal.cdf(LOW)
    expected = (normal.log_prob(action) - torch.log(mass)).sum(-1)
    torch.testing.assert_close(dist.log_prob(action), expected)


def test_truncated_samples_stay_inside_and_follow_the_density():
    net = TruncatedProjectionNetwork(3, SPEC, scale_bias_initializer_value=2.0)
    dist, _ = net(torch.zeros(1, 3))
    samples = dist.rsample((20000,))
    assert (samples >= LOW).all() and (samples <= HIGH).all()
    # a wide scale (softplus(2) ~ 2.1) over a short interval: the truncation carries
    # most of the mass; the sample mean matches the closed-form mean
    torch.testing.assert_close(samples.mean(0), dist.mean, atol=0.02, rtol=0)


def test_truncated_cauchy_dist_ctor():
    net = TruncatedProjectionNetwork(3, SPEC, dist_ctor=dist_utils.TruncatedCauchy)
    _set(net._loc_projection_layer, W1, B1)
    dist, _ = net(X)
    loc = (HIGH + LOW) / 2 + (HIGH - LOW) / 2 * torch.tanh(_linear(W1, B1))
    cauchy = td.Cauchy(loc, dist.scale)
    mass = cauchy.cdf(HIGH) - cauchy.cdf(LOW)
    action = torch.tensor([[0.5, 0.1], [-1.9, 0.45]])
    expected = (cauchy.log_prob(action) - torch.log(mass)).sum(-1)
    torch.testing.assert_close(dist.log_prob(action), expected)
    assert dist_utils.compute_entropy(dist).shape == (2,)


def test_truncated_bad_arguments():
    with pytest.raises(ValueError, match="min_scale must not exceed max_scale") as info:
        TruncatedProjectionNetwork(3, SPEC, min_scale=1.0, max_scale=0.5)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="1-D action spec"):
        TruncatedProjectionNetwork(3, BoundedTensorSpec((), torch.float32, -1.0, 1.0))


# -- CauchyProjectionNetwork ------------------------------------------------------------


def test_cauchy_log_prob_and_clipped_samples():
    net = CauchyProjectionNetwork(3, SPEC, squash_median=False, state_dependent_scale=True)
    _set(net._means_projection_layer, W1, B1)
    _set(net._std_projection_layer, W2, B2)
    median, scale = _linear(W1, B1), F.softplus(_linear(W2, B2))
    dist, _ = net(X)
    action = torch.tensor([[0.5, 0.1], [-1.9, 0.45]])
    expected = td.Cauchy(median, scale).log_prob(action).sum(-1)
    torch.testing.assert_close(dist.log_prob(action), expected)
    samples = dist.rsample((5000,))
    assert ((samples - median).abs() <= math.tan(0.49 * math.pi) * scale * (1 + 1e-5)).all()
    torch.testing.assert_close(dist_utils.get_mode(dist), median)


# -- what the algorithms call -----------------------------------------------------------

CTORS = {
    "stable_normal": functools.partial(
        StableNormalProjectionNetwork,
        state_dependent_std=True,
        squash_mean=False,
        scale_distribution=True,
        min_std=1e-3,
        max_std=10.0,
    ),
    "stable_normal_softsign": functools.partial(
        StableNormalProjectionNetwork,
        scale_distribution=True,
        dist_squashing_transform=dist_utils.Softsign(),
    ),
    "beta": functools.partial(BetaProjectionNetwork, min_concentration=1.0),
    "truncated": functools.partial(
        TruncatedProjectionNetwork, state_dependent_scale=True, min_scale=0.05, max_scale=10.0
    ),
    "cauchy_scaled": functools.partial(CauchyProjectionNetwork, scale_distribution=True),
}


@pytest.mark.parametrize("name", sorted(CTORS))
def test_as_actor_projection_for_sac_and_ppo(name):
    net = ActorDistributionNetwork(
        TensorSpec((4,)), SPEC, fc_layer_params=(8,), continuous_projection_net_ctor=CTORS[name]
    )
    obs = torch.randn(16, 4)
    dist, _ = net(obs)
    # SAC: a reparameterized sample inside the bounds, its log-probability, a gradient
    action, log_prob = _sample_with_log_prob(dist)
    assert action.shape == (16, 2) and log_prob.shape == (16,)
    assert (action >= LOW).all() and (action <= HIGH).all() and torch.isfinite(log_prob).all()
    (log_prob.sum() + action.sum()).backward()
    assert all(p.grad is not None for p in net.parameters() if p.requires_grad)
    # PPO: log-probability of stored actions, entropy, the mode
    with torch.no_grad():
        dist, _ = net(obs)
        stored = dist_utils.sample_action_distribution(dist)
        assert dist_utils.compute_log_probability(dist, stored).shape == (16,)
        assert torch.isfinite(dist_utils.compute_entropy(dist)).all()
        mode = dist_utils.get_mode(dist)
        assert (mode >= LOW).all() and (mode <= HIGH).all()
    # the distribution survives a replay buffer (spec, params, rebuild)
    spec = net.output_spec
    params = dist_utils.distributions_to_params(dist)
    rebuilt = dist_utils.params_to_distributions(params, spec)
    torch.testing.assert_close(rebuilt.log_prob(stored), dist.log_prob(stored))
