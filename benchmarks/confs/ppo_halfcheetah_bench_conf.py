"""PPO on HalfCheetah-v5 for the alf-vs-SB3 benchmark (``python -m benchmarks.ppo_halfcheetah``).

rl-baselines3-zoo's tuned HalfCheetah PPO entry, which SB3 gets too, with the same deviations
on both sides: no VecNormalize, HalfCheetah-v5, 200k env steps. What still differs: biases
start at 0 here, PyTorch's default uniform in SB3 (weights: PyTorch's default init on both).
Actions are clipped into the bounds when stepping (as SB3); both train on the unclipped one.
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

hidden = (256, 256)
alf.config(
    "PPOLoss",
    gamma=0.98,
    td_lambda=0.92,
    normalize_advantages=True,
    entropy_regularization=0.000401762,
    td_loss_weight=0.58096,
    importance_ratio_clipping=0.1,
)
alf.config(
    "PPOAlgorithm",
    actor_network_ctor=functools.partial(
        ActorDistributionNetwork,
        fc_layer_params=hidden,
        activation=torch.relu,
        kernel_initializer=torch_default_init,  # SB3 with ortho_init=False
        continuous_projection_net_ctor=functools.partial(
            NormalProjectionNetwork,
            squash_mean=False,  # SB3: a plain Gaussian, clipped only when stepping
            state_dependent_std=False,  # SB3: a learned log_std per action dim
            std_transform=torch.exp,
            std_bias_initializer_value=-2.0,  # log_std_init -2
            kernel_initializer=torch_default_init,
            scale_distribution=False,
        ),
    ),
    value_network_ctor=functools.partial(
        ValueNetwork,
        fc_layer_params=hidden,
        activation=torch.relu,
        kernel_initializer=torch_default_init,
        last_kernel_initializer=torch_default_init,
    ),
    loss_class=PPOLoss,
    optimizer=Adam(lr=2.0633e-05, eps=1e-5, gradient_clipping=0.8),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPOAlgorithm,
    unroll_length=512,
    mini_batch_length=1,
    mini_batch_size=64,
    num_updates_per_train_iter=20,
    replay_buffer_length=512,
    num_env_steps=200_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=40,  # every 20,480 env steps
    num_eval_episodes=10,
    num_eval_environments=10,
    summary_interval=10,
    num_checkpoints=5,
)
