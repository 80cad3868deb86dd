"""REDQ: the target's minimum over a random subset and the actor's ensemble mean by hand,
learning, determinism, checkpoints."""

from __future__ import annotations

import functools

import pytest
import torch

from alf.algorithms.redq_algorithm import RedqAlgorithm
from alf.algorithms.sac_algorithm import _sample_with_log_prob
from alf.algorithms.td_loss import OneStepTDLoss
from alf.networks.critic_networks import CriticNetwork
from alf.utils import seeding
from tests.algorithms import sac_variant_utils as utils


def _redq(env, cfg, hidden=(32, 32), gamma=0.9, lr=3e-3, **kwargs):
    return utils.build(
        RedqAlgorithm,
        env,
        cfg,
        lr=lr,
        hidden=hidden,
        critic_network_ctor=functools.partial(CriticNetwork, joint_fc_layer_params=hidden),
        critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=gamma),
        **kwargs,
    )


def test_redq_target_is_the_minimum_over_the_drawn_subset():
    """Critic i's target value is i + 10 × row; the minimum over a subset {i, j} is
    min(i, j) + 10 × row, whatever the other critics say; every update draws anew."""
    env = utils.make_env(num_envs=1)
    try:
        alg = _redq(env, utils.config(), num_critic_replicas=10, num_min=2)
        q = torch.arange(10.0).expand(4, 10) + 10 * torch.arange(4.0)[:, None]
        subsets = set()
        for seed in range(20):
            torch.manual_seed(seed)
            subset = torch.randperm(10)[:2]  # what the update draws
            torch.manual_seed(seed)
            value = alg._target_critic_value(q)
            torch.testing.assert_close(value, subset.min().float() + 10 * torch.arange(4.0))
            subsets.add(tuple(sorted(subset.tolist())))
        assert len(subsets) > 10
        torch.testing.assert_close(alg._actor_critic_value(q), 4.5 + 10 * torch.arange(4.0))
    finally:
        env.close()


def test_redq_target_on_a_hand_made_minibatch():
    """target_v = min over the drawn subset of the target critics at (s', a') − α log π."""
    seeding.set_random_seed(0)
    env = utils.make_env(num_envs=1)
    try:
        alg = _redq(env, utils.config(), num_critic_replicas=5, num_min=3)
        exp = utils.minibatch()
        seeding.set_random_seed(1)
        info = alg.train_steps(exp)
        obs = exp.time_step.observation
        seeding.set_random_seed(1)
        with torch.no_grad():
            next_action, next_log_pi = _sample_with_log_prob(alg.actor_network(obs[1])[0])
            target_q, _ = alg.target_critic_networks((obs[1], next_action))
            subset = torch.randperm(5)[:3]
        assert info.critic_q.shape == (2, 3, 5)
        expected = target_q[:, subset].amin(-1) - next_log_pi
        torch.testing.assert_close(info.target_v[1], expected)
    finally:
        env.close()


def test_redq_learns_continuous_counting_env():
    make = functools.partial(_redq, num_critic_replicas=10)
    assert utils.learns_counting_env(make) > 0.9 * utils.CONTINUOUS_OPTIMUM  # random: 10


def test_redq_same_seed_same_parameters():
    utils.check_same_seed_same_parameters(_redq)


def test_redq_checkpoint_round_trip():
    utils.check_checkpoint_round_trip(_redq)


def test_redq_rejects_a_subset_larger_than_the_ensemble():
    env = utils.make_env(num_envs=1)
    try:
        with pytest.raises(ValueError, match="num_min"):
            _redq(env, utils.config(), num_critic_replicas=3, num_min=4)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_redq_learns_pendulum_slow():
    """SAC's slow settings (256 × 256, lr 1e-3, γ = 0.99) with N = 10, M = 2 and an
    update-to-data ratio of 1: > -400."""
    make = functools.partial(_redq, hidden=(256, 256), gamma=0.99, lr=1e-3)
    assert utils.learns_pendulum(make) > -400.0
