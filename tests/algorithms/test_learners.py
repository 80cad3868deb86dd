"""Each algorithm's data regime follows from its class (its learner), not from conf flags."""

from __future__ import annotations

import pytest
import torch

from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf.algorithms.config import TrainerConfig
from alf.algorithms.dqn_algorithm import DqnAlgorithm
from alf.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf.algorithms.on_policy_algorithm import OnPolicyAlgorithm
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.sac_algorithm import SacAlgorithm
from alf.learners import EpochLearner, OnPolicyLearner, ReplayLearner
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import counting_env, make_algorithm, parameters_of


def test_each_algorithm_class_names_its_learner():
    assert ActorCriticAlgorithm.learner_class is OnPolicyLearner
    assert PPOAlgorithm.learner_class is EpochLearner
    assert SacAlgorithm.learner_class is ReplayLearner
    assert DqnAlgorithm.learner_class is ReplayLearner
    # PPO is an on-policy algorithm, with no second base class
    assert issubclass(PPOAlgorithm, OnPolicyAlgorithm)
    assert not issubclass(PPOAlgorithm, OffPolicyAlgorithm)


def _ppo(config, seed=0):
    seeding.set_random_seed(seed)
    env = counting_env(num_envs=4, seed=seed)
    return make_algorithm(PPOAlgorithm, env, config), env


def _ppo_config(**kwargs):
    return TrainerConfig(
        unroll_length=10,
        mini_batch_size=20,
        mini_batch_length=1,
        num_updates_per_train_iter=2,
        **kwargs,
    )


def test_ppo_needs_no_regime_settings_and_alf_confs_that_set_them_train_the_same():
    """Unset, or set to True as ALF's PPO confs do: the same training, bit for bit."""
    results = []
    for kwargs in ({}, dict(whole_replay_buffer_training=True, clear_replay_buffer=True)):
        alg, env = _ppo(_ppo_config(**kwargs))
        try:
            for _ in range(3):
                alg.train_iter()
            assert alg.replay_buffer is None and not alg.learner.keeps_replay_buffer
            results.append(parameters_of(alg))
        finally:
            env.close()
    assert all(torch.equal(results[0][k], results[1][k]) for k in results[0])


@pytest.mark.parametrize("name", ["whole_replay_buffer_training", "clear_replay_buffer"])
@pytest.mark.parametrize("algorithm", [PPOAlgorithm, ActorCriticAlgorithm])
def test_unroll_learners_refuse_a_regime_they_cannot_train_in_naming_the_setting(algorithm, name):
    env = counting_env(num_envs=2)
    try:
        with pytest.raises(ValueError, match=f"TrainerConfig.{name} cannot be False"):
            make_algorithm(algorithm, env, _ppo_config(**{name: False}))
        make_algorithm(algorithm, env, _ppo_config(**{name: True}))  # what it does anyway
    finally:
        env.close()


def _dqn(config):
    env = counting_env(num_envs=2)
    alg = DqnAlgorithm(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        q_network_ctor=lambda input_tensor_spec, action_spec: QNetwork(
            input_tensor_spec, action_spec, fc_layer_params=(8,)
        ),
        env=env,
        config=config,
        optimizer=Adam(lr=1e-3),
    )
    return alg, env


def test_off_policy_algorithms_sample_and_keep_their_buffer_by_default():
    config = TrainerConfig(
        unroll_length=4, mini_batch_size=8, mini_batch_length=2, num_updates_per_train_iter=3
    )
    alg, env = _dqn(config)
    try:
        assert not alg.learner.whole_replay_buffer_training
        assert not alg.learner.clear_replay_buffer
        assert not alg.learner.needs_bootstrap_row()
        for _ in range(3):
            alg.train_iter()
        assert alg.replay_buffer.current_size().tolist() == [12, 12]  # kept
    finally:
        env.close()


def test_trajectory_mini_batches_need_a_learner_that_trains_whole_unrolls():
    config = TrainerConfig(unroll_length=4, mini_batch_length=2, trajectory_mini_batches=True)
    env = counting_env(num_envs=2)
    try:
        make_algorithm(PPOAlgorithm, env, config)  # PPO trains on whole unrolls
        with pytest.raises(ValueError, match="trajectory_mini_batches"):
            DqnAlgorithm(
                observation_spec=env.observation_spec(),
                action_spec=env.action_spec(),
                env=env,
                config=config,
            )
    finally:
        env.close()
