"""A seconds-long PPO on ``toy_envs.ImageEnv`` (10x10 uint8 RGB images, channels first)
with a convolutional actor and value network and ``ImageScaleTransformer``, for the export
tests of a conv policy."""

import functools

import alf
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.data_transformers import ImageScaleTransformer
from alf.environments import suite_gym
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.value_networks import ValueNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="alf.environments.toy_envs:ImageEnv-v0",
    env_load_fn=functools.partial(suite_gym.load, image_channel_first=True, height=10, width=10),
    num_parallel_environments=2,
    nonparallel=True,
)
conv = ((8, 3, 1), (8, 3, 2))
alf.config(
    "PPOAlgorithm",
    actor_network_ctor=functools.partial(
        ActorDistributionNetwork, conv_layer_params=conv, fc_layer_params=(16,)
    ),
    value_network_ctor=functools.partial(
        ValueNetwork, conv_layer_params=conv, fc_layer_params=(16,)
    ),
    loss_class=PPOLoss,
    optimizer=Adam(lr=1e-3),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPOAlgorithm,
    data_transformer_ctor=[ImageScaleTransformer],
    unroll_length=16,
    mini_batch_length=1,
    mini_batch_size=16,
    num_updates_per_train_iter=1,
    num_iterations=3,
    checkpoint_interval=3,
    evaluate=False,
    summary_interval=1,
    random_seed=1,
    progress_bar=False,
)
