"""PPO on MiniGrid-DoorKey-8x8 (symbolic observation): the baseline of
``ppo_rnd_minigrid_conf.py`` and ``ppo_icm_minigrid_conf.py``.

The agent must find a key, open a door and reach the goal in a 8x8 room; the reward
(``1 - 0.9 * steps / 640``) comes only at the goal, and a uniformly random policy gets
there in about 3% of its episodes (``alf/environments/suite_minigrid.py``). The first 6 of
MiniGrid's 7 actions are kept (``done`` does nothing here). ``pip install alf[minigrid]``.
"""

import functools

import torch

import alf
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.environments import suite_minigrid
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.value_networks import ValueNetwork
from alf.optimizers import Adam

alf.config("suite_minigrid.load", num_actions=6)
alf.config(
    "create_environment",
    env_name="MiniGrid-DoorKey-8x8-v0",
    env_load_fn=suite_minigrid.load,
    num_parallel_environments=16,
    nonparallel=True,
)

hidden = (128, 64)
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
    optimizer=Adam(lr=5e-4, eps=1e-5, gradient_clipping=0.5),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPOAlgorithm,
    unroll_length=64,
    mini_batch_length=1,
    mini_batch_size=256,
    num_updates_per_train_iter=4,
    num_env_steps=1_000_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=50,
    num_eval_episodes=10,
    num_eval_environments=10,
    summary_interval=10,
    num_checkpoints=5,
)
