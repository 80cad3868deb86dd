"""PPO on Pendulum-v1 (continuous actions, Gaussian policy; 4 envs in the main process).

Hyperparameters after rl-baselines3-zoo's PPO Pendulum-v1 entry without gSDE:
1024 steps per env, 10 epochs, minibatch 64, gamma 0.9, lambda 0.95, lr 1e-3.
"""

import functools

import torch

import alf
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.environments import suite_gym
from alf.environments.gym_wrappers import ContinuousActionClip
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.projection_networks import NormalProjectionNetwork
from alf.networks.value_networks import ValueNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="Pendulum-v1",
    env_load_fn=functools.partial(suite_gym.load, gym_env_wrappers=(ContinuousActionClip,)),
    num_parallel_environments=4,
    nonparallel=True,
)
alf.config(
    "PPOLoss",
    gamma=0.9,
    td_lambda=0.95,
    td_loss_weight=0.5,
    importance_ratio_clipping=0.2,
    normalize_advantages=True,
)
alf.config(
    "PPOAlgorithm",
    actor_network_ctor=functools.partial(
        ActorDistributionNetwork,
        fc_layer_params=(64, 64),
        activation=torch.tanh,
        continuous_projection_net_ctor=functools.partial(
            NormalProjectionNetwork,
            squash_mean=False,
            std_transform=torch.exp,
            std_bias_initializer_value=0.0,
        ),
    ),
    value_network_ctor=functools.partial(
        ValueNetwork, fc_layer_params=(64, 64), activation=torch.tanh
    ),
    loss_class=PPOLoss,
    optimizer=Adam(lr=1e-3, eps=1e-5, gradient_clipping=0.5),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPOAlgorithm,
    unroll_length=1024,
    mini_batch_length=1,
    mini_batch_size=64,
    num_updates_per_train_iter=10,
    num_env_steps=200_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=5,
    num_eval_episodes=10,
    num_eval_environments=10,
    summary_interval=1,
    num_checkpoints=5,
)
