"""Shared helpers for algorithm tests: tiny envs with known optima, evaluation."""

from __future__ import annotations

import functools

import torch

from alf.algorithms.config import TrainerConfig
from alf.environments import suite_gym
from alf.environments.utils import create_environment
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.value_networks import ValueNetwork
from alf.optimizers import Adam
from alf.trainers.evaluator import Evaluator

COUNTING_ENV = "alf.environments.toy_envs:CountingEnv-v0"
#: CountingEnv pays the previous action (0..3) for 5 steps: the optimum is 3 * 5.
COUNTING_OPTIMUM = 15.0


def counting_env(num_envs: int = 4, seed: int = 0, terminate_at: int = 5):
    """``num_envs`` CountingEnvs in the main process."""
    load = functools.partial(suite_gym.load, terminate_at=terminate_at)
    return create_environment(
        env_name=COUNTING_ENV,
        env_load_fn=load,
        num_parallel_environments=num_envs,
        nonparallel=True,
        seed=seed,
    )


def small_networks(hidden=(32,)):
    """Actor and value network ctors with one small hidden layer."""
    return dict(
        actor_network_ctor=functools.partial(ActorDistributionNetwork, fc_layer_params=hidden),
        value_network_ctor=functools.partial(ValueNetwork, fc_layer_params=hidden),
    )


def make_algorithm(algorithm_cls, env, config: TrainerConfig, lr: float = 1e-2, **kwargs):
    """Build ``algorithm_cls`` on ``env`` with small networks and Adam(lr)."""
    return algorithm_cls(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=config,
        optimizer=Adam(lr=lr),
        **small_networks(),
        **kwargs,
    )


def evaluate(algorithm, env, num_episodes: int = 8, seed: int = 123) -> float:
    """Average return of the deterministic policy."""
    metrics = Evaluator(algorithm, env, num_episodes, seed=seed).evaluate()
    return float(torch.as_tensor(metrics.average_return))


def parameters_of(algorithm) -> dict:
    """A detached copy of every parameter and buffer."""
    return {
        k: v.detach().clone()
        for k, v in algorithm.state_dict().items()
        if isinstance(v, torch.Tensor)
    }
