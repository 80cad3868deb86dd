"""Actor-critic (A2C) on CartPole-v1, on-policy: every unroll is used for one update."""

import functools

import torch

import alf
from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf.algorithms.actor_critic_loss import ActorCriticLoss
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.value_networks import ValueNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment", env_name="CartPole-v1", num_parallel_environments=8, nonparallel=True
)
alf.config(
    "ActorCriticLoss",
    gamma=0.99,
    use_gae=True,
    td_lambda=0.95,
    entropy_regularization=1e-3,
    td_loss_weight=0.5,
    normalize_advantages=True,
)
alf.config(
    "ActorCriticAlgorithm",
    actor_network_ctor=functools.partial(
        ActorDistributionNetwork, fc_layer_params=(64, 64), activation=torch.tanh
    ),
    value_network_ctor=functools.partial(
        ValueNetwork, fc_layer_params=(64, 64), activation=torch.tanh
    ),
    loss_class=ActorCriticLoss,
    optimizer=Adam(lr=2e-3, gradient_clipping=0.5),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=ActorCriticAlgorithm,
    unroll_length=16,
    num_iterations=1500,
    evaluate=True,
    eval_interval=100,
    num_eval_episodes=10,
    num_eval_environments=10,
    summary_interval=20,
    num_checkpoints=5,
)
