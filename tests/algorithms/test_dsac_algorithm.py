"""DSAC: fractions, replica reduction, risk measure and epistemic α by hand, the quantile
critic network, learning, determinism, checkpoints."""

from __future__ import annotations

import functools
import math

import pytest
import torch

from alf.algorithms.dsac_algorithm import (
    DSacAlgorithm,
    cvar_distortion,
    sample_fractions,
    wang_distortion,
)
from alf.algorithms.quantile_td_loss import OneStepTDQRLoss
from alf.networks import CriticQuantileNetwork
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import seeding
from tests.algorithms import sac_variant_utils as utils


def _dsac(env, cfg, hidden=(32, 32), gamma=0.9, lr=3e-3, **kwargs):
    kwargs.setdefault("num_quantiles", 8)
    kwargs.setdefault("alpha_optimizer", None)  # ALF's conf: the epistemic alpha
    return utils.build(
        DSacAlgorithm,
        env,
        cfg,
        lr=lr,
        hidden=hidden,
        critic_network_ctor=functools.partial(
            CriticQuantileNetwork,
            obs_act_tau_joint_fc_layer_params=hidden,
            tau_embedding_dim=16,
        ),
        critic_loss_ctor=functools.partial(OneStepTDQRLoss, gamma=gamma),
        **kwargs,
    )


def test_sample_fractions():
    tau_hat, delta = sample_fractions(2, 4, "fixed")
    torch.testing.assert_close(tau_hat, torch.tensor([[0.125, 0.375, 0.625, 0.875]] * 2))
    torch.testing.assert_close(delta, torch.full((2, 4), 0.25))
    torch.manual_seed(0)
    tau_hat, delta = sample_fractions(1000, 8, "iqn")
    torch.testing.assert_close(delta.sum(-1), torch.ones(1000))
    # each width is (u + 0.1) / sum: at least 0.1 / 8.8
    assert float(delta.min()) >= 0.1 / 8.8 - 1e-6
    right = delta.cumsum(-1)
    torch.testing.assert_close(tau_hat, right - delta / 2)


def test_distortions():
    tau = torch.tensor([0.1, 0.5, 0.9])
    torch.testing.assert_close(cvar_distortion(tau, eta=0.5), tau / 2)
    torch.testing.assert_close(wang_distortion(tau, eta=0.0), tau)
    assert (wang_distortion(tau, eta=-0.75) < tau).all()  # risk-averse: lower fractions


def _with_known_critics(alg, offsets):
    """Replace the critics by Z^i_τ(s, a) = τ + offsets[i]: a uniform return on
    [offset, offset + 1] (the quantile function of U(0, 1), shifted)."""
    offsets = torch.tensor(offsets)

    def quantiles(networks, observation, action, tau_hat):
        return tau_hat[:, None, :] + offsets[None, :, None]

    alg._quantiles = quantiles


@pytest.mark.parametrize(
    "distortion, expected",
    [(None, 0.5), (functools.partial(cvar_distortion, eta=0.5), 0.25)],
)
def test_actor_value_is_the_risk_measure(distortion, expected):
    """With the critics Z^1_τ = τ, Z^2_τ = τ + 1 (R = 2: the minimum is Z^1, U(0, 1)) and
    fixed fractions the actor's value is the distorted mean: 1/2 risk neutral, and
    CVaR_0.5 of U(0, 1) = the mean of its lower half = 1/4. The epistemic std of the two
    critics is 1/√2 at every fraction."""
    env = utils.make_env(num_envs=1)
    try:
        alg = _dsac(env, utils.config(), tau_type="fixed", risk_distortion=distortion)
        _with_known_critics(alg, [0.0, 1.0])
        info = alg.train_steps(utils.minibatch())
        torch.testing.assert_close(info.actor_q, torch.full((1, 3), expected))
        torch.testing.assert_close(info.q_std, torch.full((1, 3), 1 / math.sqrt(2)))
        # the target: min over the replicas of the target fractions (no entropy term)
        torch.testing.assert_close(info.target_v[1], info.critic_q[0].amin(1))
    finally:
        env.close()


def test_replica_reduction():
    """R = 2: the minimum; R = 3: mean − std; by critic mean: the replica of the lowest
    (weighted) mean; the epistemic α scales the entropy term by the std."""
    env = utils.make_env(num_envs=1)
    try:
        z = torch.tensor([[[0.0, 4.0], [1.0, 2.0], [2.0, 0.0]]])  # [B=1, R=3, N=2]
        alg = _dsac(env, utils.config(), num_critic_replicas=3)
        value, std = alg._replica_reduce(z, torch.full((1, 2), 0.5))
        torch.testing.assert_close(std, torch.tensor([[1.0, 2.0]]))
        torch.testing.assert_close(value, torch.tensor([[0.0, 0.0]]))
        by_mean = _dsac(env, utils.config(), num_critic_replicas=3, alpha_optimizer=Adam(lr=1e-3))
        by_mean._min_critic_by_critic_mean = True
        value, std = by_mean._replica_reduce(z, torch.tensor([[0.9, 0.1]]))  # means .4 1.1 1.8
        torch.testing.assert_close(value, torch.tensor([[0.0, 4.0]]))
        assert std is None
        assert alg.epistemic_alpha and not by_mean.epistemic_alpha
        assert not alg.log_alpha.requires_grad and by_mean.log_alpha.requires_grad
    finally:
        env.close()


@pytest.mark.parametrize("epistemic", [True, False])
def test_dsac_loss_uses_the_fractions(epistemic):
    """The critic loss is TDQRLoss with the critics' fractions τ̂ and the target
    samples' probabilities Δτ'; the actor loss α·std·log π − Q with the epistemic α (no α
    loss), else SAC's α log π − Q and −log α (log π + H̄)."""
    seeding.set_random_seed(0)
    env = utils.make_env(num_envs=1)
    try:
        extra = {} if epistemic else dict(alpha_optimizer=Adam(lr=1e-3), use_entropy_reward=True)
        alg = _dsac(env, utils.config(), **extra)
        with torch.no_grad():
            alg.log_alpha.fill_(-1.0)
        info = alg.train_steps(utils.minibatch())
        loss = alg.calc_loss(info).loss
        td = alg._critic_loss(
            info.reward,
            info.step_type,
            info.discount,
            info.critic_q,
            info.target_v,
            tau_hat=info.tau_hat,
            next_delta_tau=info.next_delta_tau,
        ).loss
        alpha = math.exp(-1.0)
        if epistemic:
            rest = alpha * info.q_std * info.neg_entropy - info.actor_q
        else:
            assert info.q_std == ()
            rest = alpha * info.neg_entropy - info.actor_q + (info.neg_entropy - 2.0)
        torch.testing.assert_close(loss[0], td[0] + rest[0])
        assert not torch.equal(info.tau_hat[0], info.next_delta_tau[1])
    finally:
        env.close()


def test_critic_quantile_network_replicas_are_independent():
    spec = (TensorSpec((3,)), BoundedTensorSpec((2,), minimum=-1.0, maximum=1.0))
    torch.manual_seed(0)
    net = CriticQuantileNetwork(
        spec, TensorSpec((5,)), obs_act_tau_joint_fc_layer_params=(16, 8), num_replicas=3
    )
    inputs = ((torch.randn(4, 3), torch.randn(4, 2)), torch.rand(4, 5))
    out, _ = net(inputs)
    assert out.shape == (4, 3, 5) and net.output_spec.shape == (3, 5)
    # replica 1's output depends on replica 1's parameters only
    out[:, 1].sum().backward()
    grads = [p.grad for p in net.parameters() if p.grad is not None and p.grad.ndim == 3]
    assert grads and all(g[0].abs().sum() == 0 and g[2].abs().sum() == 0 for g in grads)
    single = CriticQuantileNetwork(spec, TensorSpec((5,)), obs_act_tau_joint_fc_layer_params=(8,))
    assert single(inputs)[0].shape == (4, 5)
    assert single.make_parallel(2)(inputs)[0].shape == (4, 2, 5)


def test_dsac_learns_continuous_counting_env():
    assert utils.learns_counting_env(_dsac) > 0.9 * utils.CONTINUOUS_OPTIMUM  # random: 10


def test_dsac_same_seed_same_parameters():
    utils.check_same_seed_same_parameters(_dsac)


def test_dsac_checkpoint_round_trip():
    utils.check_checkpoint_round_trip(_dsac, num_optimizers=2)  # no α optimizer


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_dsac_learns_pendulum_slow():
    """SAC's slow settings (256 × 256, lr 1e-3, γ = 0.99), 32 IQN fractions, SAC's α
    tuning: > -400."""
    make = functools.partial(
        _dsac,
        hidden=(256, 256),
        gamma=0.99,
        lr=1e-3,
        num_quantiles=32,
        alpha_optimizer=Adam(lr=1e-3),
    )
    assert utils.learns_pendulum(make) > -400.0
