"""PPO on a small image task with a convolutional encoder in ALF's layer language.

``ImageCueEnv`` (``alf/environments/toy_envs.py``): an 8x8 image with a white 2x2 square in
its left or right half; the agent earns 1 per step for naming the side (8 per episode at
best, 4 by guessing). The encoder is an ``alf.nn.Sequential`` shared by the actor and value
heads (``encoding_network_ctor``): ``Cast`` and ``Scale`` to [0, 1], two ``Conv2D`` layers,
``Reshape`` to a vector and an ``FC`` layer; the heads are linear.
"""

import torch

import alf
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.value_networks import ValueNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="alf.environments.toy_envs:ImageCueEnv-v0",
    num_parallel_environments=8,
    nonparallel=True,
)


def encoder_ctor(input_tensor_spec):
    channels, height, width = input_tensor_spec.shape
    conv_out = ((height - 3) // 2 + 1) * ((width - 3) // 2 + 1) * 16
    return alf.nn.Sequential(
        alf.layers.Cast(torch.float32),
        alf.layers.Scale(1 / 255),
        alf.layers.Conv2D(channels, 16, 3, padding=1),
        alf.layers.Conv2D(16, 16, 3, strides=2),
        alf.layers.Reshape(-1),
        alf.layers.FC(conv_out, 64, activation=torch.relu_),
        input_tensor_spec=input_tensor_spec,
    )


alf.config("PPOLoss", gamma=0.9, td_lambda=0.95, entropy_regularization=0.01)
alf.config(
    "PPOAlgorithm",
    encoding_network_ctor=encoder_ctor,
    actor_network_ctor=ActorDistributionNetwork,
    value_network_ctor=ValueNetwork,
    loss_class=PPOLoss,
    optimizer=Adam(lr=1e-3, eps=1e-5, gradient_clipping=0.5),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPOAlgorithm,
    unroll_length=16,
    mini_batch_length=1,
    mini_batch_size=64,
    num_updates_per_train_iter=4,
    num_env_steps=20_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=20,
    num_eval_episodes=20,
    num_eval_environments=4,
    summary_interval=10,
    num_checkpoints=2,
)
