"""SAC + HindsightExperienceTransformer learns PointGoal-v0 (sparse reward) in seconds."""

from __future__ import annotations

import functools

import pytest
import torch

from alf.algorithms.config import TrainerConfig
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork
from alf.algorithms.td_loss import OneStepTDLoss
from alf.data_transformers import (
    HindsightExperienceTransformer,
    create_data_transformer,
    l2_distance_reward_fn,
)
from alf.environments.utils import create_environment
from alf.networks.critic_networks import CriticNetwork
from alf.optimizers import Adam
from alf.trainers.evaluator import Evaluator
from alf.utils import seeding
from alf.utils.schedulers import update_progress

POINT_GOAL = "alf.environments.point_goal_env:PointGoal-v0"


def _success_rate(algorithm, env, num_episodes=50) -> float:
    """Fraction of deterministic episodes whose last step has ``is_success`` 1."""
    metrics = Evaluator(algorithm, env, num_episodes, seed=123).evaluate()
    return metrics.average_env_info()["is_success"]


def _train(use_her: bool, env_steps: int, seed: int = 0) -> float:
    """Success rate after ``env_steps``; every random stream, the envs' included, comes from
    ``seed`` (an unseeded env draws from the OS and makes the result vary from run to run)."""
    seeding.set_random_seed(seed)
    env = create_environment(
        env_name=POINT_GOAL, num_parallel_environments=4, nonparallel=True, seed=seed
    )
    eval_env = create_environment(
        env_name=POINT_GOAL, num_parallel_environments=10, nonparallel=True, seed=99
    )
    try:
        her = functools.partial(
            HindsightExperienceTransformer,
            her_proportion=0.8,
            reward_fn=functools.partial(l2_distance_reward_fn, distance_threshold=0.05),
        )
        config = TrainerConfig(
            unroll_length=1,
            mini_batch_length=2,
            mini_batch_size=256,
            num_updates_per_train_iter=2,
            whole_replay_buffer_training=False,
            clear_replay_buffer=False,
            replay_buffer_length=10_000,
            initial_collect_steps=100,
        )
        transformer = create_data_transformer([her] if use_her else None, env.observation_spec())
        hidden = (128, 128)
        algorithm = SacAlgorithm(
            transformer.transformed_observation_spec,
            env.action_spec(),
            env=env,
            config=config,
            actor_network_ctor=functools.partial(
                SquashedNormalActorNetwork, fc_layer_params=hidden, activation=torch.relu_
            ),
            critic_network_ctor=functools.partial(
                CriticNetwork, joint_fc_layer_params=hidden, activation=torch.relu_
            ),
            critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=0.98),
            initial_log_alpha=-2.0,
            target_update_tau=0.05,
            actor_optimizer=Adam(lr=1e-3),
            critic_optimizer=Adam(lr=1e-3),
            alpha_optimizer=Adam(lr=1e-3),
        )
        algorithm.set_data_transformer(transformer)
        steps = 0
        while steps < env_steps:
            steps += algorithm.train_iter()
        return _success_rate(algorithm, eval_env)
    finally:
        env.close()
        eval_env.close()
        update_progress(0, 0, 0.0)


def test_sac_her_reaches_goals():
    assert _train(use_her=True, env_steps=3200) >= 0.8


@pytest.mark.slow
def test_sac_without_her_does_not_in_the_same_budget():
    assert _train(use_her=True, env_steps=10_000, seed=1) >= 0.9
    assert _train(use_her=False, env_steps=10_000, seed=1) <= 0.2
