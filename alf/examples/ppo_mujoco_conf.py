"""PPO on MuJoCo (HalfCheetah-v5 by default; needs ``pip install -e '.[mujoco]'``).

Switch the task with ``--conf_param "create_environment.env_name='Hopper-v5'"``.
Hyperparameters after rl-baselines3-zoo's PPO HalfCheetah entry (1 env, 512
steps, minibatch 64, 20 epochs, gamma 0.98, lambda 0.92, clip 0.1, lr 2.06e-5,
ent 4e-4, vf 0.58, grad clip 0.8, 256x256 ReLU nets with PyTorch's default init, log-std
init -2), except
observation/reward normalization, which arrives with the data transformers.
"""

import functools

import torch

import alf
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.environments import suite_gym
from alf.environments.gym_wrappers import ContinuousActionClip
from alf.initializers import torch_default_init
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.projection_networks import NormalProjectionNetwork
from alf.networks.value_networks import ValueNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="HalfCheetah-v5",
    env_load_fn=functools.partial(suite_gym.load, gym_env_wrappers=(ContinuousActionClip,)),
    num_parallel_environments=1,
    nonparallel=True,
)
alf.config(
    "PPOLoss",
    gamma=0.98,
    td_lambda=0.92,
    td_loss_weight=0.58,
    entropy_regularization=4e-4,
    importance_ratio_clipping=0.1,
    normalize_advantages=True,
)
alf.config(
    "PPOAlgorithm",
    actor_network_ctor=functools.partial(
        ActorDistributionNetwork,
        fc_layer_params=(256, 256),
        activation=torch.relu_,
        kernel_initializer=torch_default_init,
        continuous_projection_net_ctor=functools.partial(
            NormalProjectionNetwork,
            squash_mean=False,
            std_transform=torch.exp,
            std_bias_initializer_value=-2.0,
        ),
    ),
    value_network_ctor=functools.partial(
        ValueNetwork,
        fc_layer_params=(256, 256),
        activation=torch.relu_,
        kernel_initializer=torch_default_init,
    ),
    loss_class=PPOLoss,
    optimizer=Adam(lr=2.0633e-5, eps=1e-5, gradient_clipping=0.8),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPOAlgorithm,
    unroll_length=512,
    mini_batch_length=1,
    mini_batch_size=64,
    num_updates_per_train_iter=20,
    num_env_steps=1_000_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=10,
    num_eval_episodes=5,
    num_eval_environments=5,
    summary_interval=1,
    num_checkpoints=5,
)
