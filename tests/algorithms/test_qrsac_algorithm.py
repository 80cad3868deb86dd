"""QRSAC: the replica reduction and target by hand, learning, determinism, checkpoints."""

from __future__ import annotations

import functools

import pytest
import torch

from alf.algorithms.qrsac_algorithm import QrsacAlgorithm, replica_min
from alf.algorithms.quantile_td_loss import (
    OneStepTDQRLoss,
    quantile_huber_loss,
    quantile_midpoints,
)
from alf.algorithms.sac_algorithm import _sample_with_log_prob
from alf.networks.critic_networks import CriticNetwork
from alf.tensor_specs import TensorSpec
from alf.utils import seeding
from tests.algorithms import sac_variant_utils as utils

NUM_QUANTILES = 16


def _qrsac(env, cfg, hidden=(32, 32), gamma=0.9, lr=3e-3, **kwargs):
    kwargs.setdefault("use_entropy_reward", True)
    return utils.build(
        QrsacAlgorithm,
        env,
        cfg,
        lr=lr,
        hidden=hidden,
        critic_network_ctor=functools.partial(
            CriticNetwork,
            joint_fc_layer_params=hidden,
            output_tensor_spec=TensorSpec((NUM_QUANTILES,)),
        ),
        critic_loss_ctor=functools.partial(
            OneStepTDQRLoss, num_quantiles=NUM_QUANTILES, gamma=gamma
        ),
        **kwargs,
    )


def test_replica_min_per_quantile_and_by_mean():
    q = torch.tensor([[[0.0, 5.0, 6.0], [1.0, 2.0, 3.0]]])  # [N=1, R=2, M=3]; means 11/3, 2
    torch.testing.assert_close(replica_min(q, by_mean=False), torch.tensor([[0.0, 2.0, 3.0]]))
    torch.testing.assert_close(replica_min(q, by_mean=True), torch.tensor([[1.0, 2.0, 3.0]]))
    weights = torch.tensor([[0.9, 0.05, 0.05]])  # weighted means 0.55, 1.15
    torch.testing.assert_close(replica_min(q, True, weights), torch.tensor([[0.0, 5.0, 6.0]]))


@pytest.mark.parametrize("by_mean", [False, True])
def test_qrsac_terms_on_a_hand_made_minibatch(by_mean):
    """critic_q are the critics' quantiles at (s, a); target_v the reduced target quantiles
    at (s', a') minus α log π(a'|s'); actor_q the mean of the reduced quantiles at (s, ã);
    the loss is TDQRLoss's on them."""
    seeding.set_random_seed(0)
    env = utils.make_env(num_envs=1)
    try:
        alg = _qrsac(env, utils.config(), min_critic_by_critic_mean=by_mean)
        exp = utils.minibatch()
        with torch.no_grad():
            alg.log_alpha.fill_(-1.0)
        seeding.set_random_seed(1)
        info = alg.train_steps(exp)
        obs, act = exp.time_step.observation, exp.rollout_info.action
        critic_q, _ = alg.critic_networks((obs[0], act[0]))
        assert info.critic_q.shape == (2, 3, 2, NUM_QUANTILES)
        torch.testing.assert_close(info.critic_q[0], critic_q)
        # the same random draws as train_steps: a' first, then ã
        seeding.set_random_seed(1)
        with torch.no_grad():
            next_action, next_log_pi = _sample_with_log_prob(alg.actor_network(obs[1])[0])
            new_action, _ = _sample_with_log_prob(alg.actor_network(obs[0])[0])
            target_q, _ = alg.target_critic_networks((obs[1], next_action))
            actor_q, _ = alg.critic_networks((obs[0], new_action))
        target = (
            replica_min(target_q, by_mean) - torch.exp(torch.tensor(-1.0)) * next_log_pi[:, None]
        )
        torch.testing.assert_close(info.target_v[1], target)
        torch.testing.assert_close(info.actor_q[0], replica_min(actor_q, by_mean).mean(-1))
        loss = alg.calc_loss(info).loss
        # column 0: a bootstrapped transition, its critic part by hand
        y = exp.time_step.reward[1, 0] + 0.9 * target[0]
        tau = quantile_midpoints(NUM_QUANTILES)
        critic_part = quantile_huber_loss(critic_q[0], y, tau).sum()
        actor_part = torch.exp(torch.tensor(-1.0)) * info.neg_entropy[0, 0] - info.actor_q[0, 0]
        alpha_part = 1.0 * (info.neg_entropy[0, 0] - 2.0)  # -log α (log π + H̄), H̄ = -2
        torch.testing.assert_close(loss[0, 0], critic_part + actor_part + alpha_part)
    finally:
        env.close()


def test_qrsac_learns_continuous_counting_env():
    ret = utils.learns_counting_env(_qrsac)
    assert ret > 0.9 * utils.CONTINUOUS_OPTIMUM  # random: 10


def test_qrsac_same_seed_same_parameters():
    utils.check_same_seed_same_parameters(_qrsac)


def test_qrsac_checkpoint_round_trip():
    utils.check_checkpoint_round_trip(_qrsac)


def test_qrsac_rejects_a_scalar_critic():
    env = utils.make_env(num_envs=1)
    try:
        with pytest.raises(ValueError, match="quantiles"):
            utils.build(QrsacAlgorithm, env, critic_network_ctor=CriticNetwork)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_qrsac_learns_pendulum_slow():
    """SAC's slow settings (256 × 256, lr 1e-3, γ = 0.99) with 16 quantiles: > -400."""
    make = functools.partial(_qrsac, hidden=(256, 256), gamma=0.99, lr=1e-3)
    assert utils.learns_pendulum(make) > -400.0
