"""PPO on HalfCheetah-v5 for the alf-vs-SB3 benchmark (benchmarks/ppo_halfcheetah.py).

Mirrors rl-baselines3-zoo's tuned ``HalfCheetah-v3`` PPO entry (hyperparams/ppo.yml)
as far as alf supports it; ``ppo_halfcheetah.py`` gives SB3 the same values:

    n_envs 1, n_steps 512, batch_size 64, n_epochs 20, gamma 0.98, gae_lambda 0.92,
    learning_rate 2.0633e-05, clip_range 0.1, ent_coef 0.000401762,
    vf_coef 0.58096, max_grad_norm 0.8, policy_kwargs: log_std_init -2,
    ortho_init False, ReLU, separate 256x256 actor and critic.

Deviations from the zoo entry, for both frameworks:

* ``normalize: true`` (VecNormalize of observations and rewards) is dropped:
  alf has no normalizing data transformer yet, so neither side normalizes.
* 200k env steps instead of 1M, on HalfCheetah-v5 instead of v3.

Differences between the two frameworks that remain:

* Initialization: SB3 (ortho_init=False) uses PyTorch's default ``nn.Linear`` init;
  alf's weights use the same (``torch_default_init``) in every layer, the output
  layers included. Biases: SB3's are PyTorch's default uniform, alf's are 0.
* Actions: SB3 clips the sampled Gaussian action into the bounds before stepping
  the env; here ``ContinuousActionClip`` does the same (the unclipped action is
  what both train on).
"""

import functools

import torch

import alf
from alf.algorithms.config import TrainerConfig  # noqa: F401 (registers the configurable)
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.environments import suite_gym
from alf.environments import utils as env_utils  # noqa: F401
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
    whole_replay_buffer_training=True,
    clear_replay_buffer=True,
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
