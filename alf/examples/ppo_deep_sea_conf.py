"""PPO alone on DeepSea-v0 (size 12): the baseline of the exploration confs.

``ppo_rnd_deep_sea_conf.py`` and ``ppo_icm_deep_sea_conf.py`` add an intrinsic reward to
this same PPO. Every right move costs 0.01 / 12 and only the path of 12 right moves pays
(+1, ``alf/environments/deep_sea.py``): an entropy-regularized policy that has never met
the treasure learns to go left. ``AverageEnvInfo/success`` (train and eval) is the share
of episodes that took the treasure. ``DEEP_SEA_SIZE`` in a conf that imports this one sets
the size; ``--conf_param "suite_gym.load.size=..."`` too.
"""

import functools

import torch

import alf
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.environments import deep_sea, suite_gym
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.value_networks import ValueNetwork
from alf.optimizers import Adam

DEEP_SEA_SIZE = 12

alf.config(
    "create_environment",
    env_name="alf.environments.deep_sea:DeepSea-v0",
    env_load_fn=functools.partial(suite_gym.load, size=DEEP_SEA_SIZE),
    num_parallel_environments=16,
    nonparallel=True,
)
del deep_sea  # imported to register the id

hidden = (64, 64)
alf.config(
    "PPOLoss",
    gamma=0.99,
    td_lambda=0.95,
    normalize_advantages=True,
    entropy_regularization=0.01,
    importance_ratio_clipping=0.2,
)
alf.config(
    "PPOAlgorithm",
    actor_network_ctor=functools.partial(
        ActorDistributionNetwork, fc_layer_params=hidden, activation=torch.tanh
    ),
    value_network_ctor=functools.partial(
        ValueNetwork, fc_layer_params=hidden, activation=torch.tanh
    ),
    optimizer=Adam(lr=1e-3, eps=1e-5, gradient_clipping=0.5),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPOAlgorithm,
    unroll_length=DEEP_SEA_SIZE,
    mini_batch_length=1,
    mini_batch_size=64,
    num_updates_per_train_iter=4,
    num_env_steps=200_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=100,
    num_eval_episodes=1,
    num_eval_environments=1,
    summary_interval=20,
    num_checkpoints=2,
)
