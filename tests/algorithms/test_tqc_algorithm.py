"""TQC: the truncated target and the actor's mean by hand, learning, determinism,
checkpoints."""

from __future__ import annotations

import functools

import pytest
import torch

from alf.algorithms.quantile_td_loss import OneStepTDQRLoss
from alf.algorithms.sac_algorithm import _sample_with_log_prob
from alf.algorithms.tqc_algorithm import TqcAlgorithm
from alf.networks.critic_networks import CriticNetwork
from alf.utils import seeding
from tests.algorithms import sac_variant_utils as utils


def _tqc(env, cfg, hidden=(32, 32), gamma=0.9, lr=3e-3, **kwargs):
    kwargs.setdefault("num_quantiles", 16)
    return utils.build(
        TqcAlgorithm,
        env,
        cfg,
        lr=lr,
        hidden=hidden,
        critic_network_ctor=functools.partial(CriticNetwork, joint_fc_layer_params=hidden),
        critic_loss_ctor=functools.partial(OneStepTDQRLoss, gamma=gamma),
        **kwargs,
    )


def _small_tqc(**kwargs):
    env = utils.make_env(num_envs=1)
    return _tqc(env, utils.config(), **kwargs), env


def test_tqc_truncation_and_actor_mean_by_hand():
    """R = 2 critics × M = 3 quantiles, d = 1: the pooled (1, 5, 3, 2, 0, 4) sorted is
    (0, 1, 2, 3, 4, 5), the d·R = 2 largest dropped leaves (0, 1, 2, 3); the actor's value
    is the mean of all six, 2.5."""
    alg, env = _small_tqc(num_quantiles=3, top_quantiles_to_drop_per_net=1)
    try:
        q = torch.tensor([[[1.0, 5.0, 3.0], [2.0, 0.0, 4.0]]])
        assert alg.num_target_quantiles == 4
        torch.testing.assert_close(alg._target_critic_value(q), torch.tensor([[0.0, 1, 2, 3]]))
        torch.testing.assert_close(alg._actor_critic_value(q), torch.tensor([2.5]))
    finally:
        env.close()


def test_tqc_one_critic_and_no_truncation():
    alg, env = _small_tqc(num_quantiles=3, top_quantiles_to_drop_per_net=0, num_critic_replicas=1)
    try:
        q = torch.tensor([[3.0, 1.0, 2.0]])  # one critic: [N, M]
        torch.testing.assert_close(alg._target_critic_value(q), torch.tensor([[1.0, 2, 3]]))
        torch.testing.assert_close(alg._actor_critic_value(q), torch.tensor([2.0]))
    finally:
        env.close()


def test_tqc_target_on_a_hand_made_minibatch():
    """target_v: the K smallest pooled target quantiles at (s', a') minus α log π(a'|s')."""
    seeding.set_random_seed(0)
    alg, env = _small_tqc(num_critic_replicas=3, top_quantiles_to_drop_per_net=5)
    try:
        exp = utils.minibatch()
        seeding.set_random_seed(1)
        info = alg.train_steps(exp)
        obs = exp.time_step.observation
        seeding.set_random_seed(1)
        with torch.no_grad():
            next_action, next_log_pi = _sample_with_log_prob(alg.actor_network(obs[1])[0])
            target_q, _ = alg.target_critic_networks((obs[1], next_action))
        pooled = target_q.reshape(3, -1).sort(-1).values[:, : (16 - 5) * 3]
        assert info.target_v.shape == (2, 3, 33)
        torch.testing.assert_close(info.target_v[1], pooled - next_log_pi[:, None])
        assert info.critic_q.shape == (2, 3, 3, 16)
    finally:
        env.close()


def test_tqc_learns_continuous_counting_env():
    assert utils.learns_counting_env(_tqc) > 0.9 * utils.CONTINUOUS_OPTIMUM  # random: 10


def test_tqc_same_seed_same_parameters():
    utils.check_same_seed_same_parameters(_tqc)


def test_tqc_checkpoint_round_trip():
    utils.check_checkpoint_round_trip(_tqc)


def test_tqc_rejects_dropping_every_quantile():
    env = utils.make_env(num_envs=1)
    try:
        with pytest.raises(ValueError, match="top_quantiles_to_drop_per_net"):
            _tqc(env, utils.config(), num_quantiles=2, top_quantiles_to_drop_per_net=2)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_tqc_learns_pendulum_slow():
    """SAC's slow settings (256 × 256, lr 1e-3, γ = 0.99), sb3-contrib's TQC defaults
    (2 critics × 25 quantiles, 2 dropped per critic): > -400."""
    make = functools.partial(_tqc, hidden=(256, 256), gamma=0.99, lr=1e-3, num_quantiles=25)
    assert utils.learns_pendulum(make) > -400.0
