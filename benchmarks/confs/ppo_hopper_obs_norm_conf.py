"""PPO on Hopper-v5 with or without ``ObservationNormalizer`` (benchmarks/obs_norm_hopper.py).

Hyperparameters: rl-baselines3-zoo's tuned PPO Hopper entry — 1 env, n_steps 512,
batch 32, 5 epochs, gamma 0.999, gae_lambda 0.99, lr 9.80828e-5, clip 0.2, ent
0.00229519, vf 0.835671, max_grad_norm 0.7, log_std_init -2, separate 256x256 ReLU
actor and critic with PyTorch's default init — except that the zoo's VecNormalize
(observations and rewards) is replaced by the single switch measured here:

* ``obs_norm=True``: ``ObservationNormalizer(clipping=10, update_mode='rollout')``
  (running mean/std over every unrolled step, clipped to [-10, 10] as VecNormalize's
  ``clip_obs``); ``num_prenormalization_steps`` (a ``define_config``, 0 by default)
  initializes its statistics with the initial policy first;
* ``obs_norm=False``: raw observations.

Rewards are not normalized in either variant.
"""

import functools

import torch

import alf
from alf.algorithms.config import TrainerConfig  # noqa: F401 (registers the configurable)
from alf.algorithms.data_transformer import ObservationNormalizer
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

alf.define_config("obs_norm", True)
alf.define_config("prenormalization_steps", 0)

alf.config(
    "create_environment",
    env_name="Hopper-v5",
    env_load_fn=functools.partial(suite_gym.load, gym_env_wrappers=(ContinuousActionClip,)),
    num_parallel_environments=1,
    nonparallel=True,
)
alf.config(
    "PPOLoss",
    gamma=0.999,
    td_lambda=0.99,
    td_loss_weight=0.835671,
    entropy_regularization=0.00229519,
    importance_ratio_clipping=0.2,
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
    optimizer=Adam(lr=9.80828e-5, eps=1e-5, gradient_clipping=0.7),
)
normalizer = functools.partial(ObservationNormalizer, clipping=10.0, update_mode="rollout")
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPOAlgorithm,
    data_transformer_ctor=[normalizer] if alf.get_config_value("obs_norm") else None,
    num_prenormalization_steps=alf.get_config_value("prenormalization_steps"),
    unroll_length=512,
    mini_batch_length=1,
    mini_batch_size=32,
    num_updates_per_train_iter=5,
    replay_buffer_length=512,
    num_env_steps=100_000,
    num_iterations=0,
    evaluate=False,
    summary_interval=1,
    num_checkpoints=1,
)
