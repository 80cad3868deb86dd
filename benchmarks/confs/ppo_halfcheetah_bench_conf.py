"""PPO on HalfCheetah-v5 for ``python -m benchmarks.vs_sb3 --task ppo_halfcheetah``.

rl-baselines3-zoo's tuned HalfCheetah PPO entry (``alf/examples/ppo_mujoco_conf.py``) with its
unrounded coefficients and SB3's networks, the same deviations on both sides (no VecNormalize,
v5, 200k env steps). Still different: biases start at 0 here, uniform in SB3. Actions are
clipped when stepping (as SB3); both train on the unclipped one.
"""

import functools

import torch

import alf
from alf.initializers import torch_default_init
from alf.networks import ActorDistributionNetwork, NormalProjectionNetwork, ValueNetwork

alf.import_config("ppo_mujoco_conf.py")

alf.config("PPOLoss", entropy_regularization=0.000401762, td_loss_weight=0.58096)
# SB3's MLPs (ortho_init=False: torch's default init)
trunk = dict(
    fc_layer_params=(256, 256), activation=torch.relu, kernel_initializer=torch_default_init
)
alf.config(
    "PPOAlgorithm",
    actor_network_ctor=functools.partial(
        ActorDistributionNetwork,
        **trunk,
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
        ValueNetwork, **trunk, last_kernel_initializer=torch_default_init
    ),
)
alf.config("TrainerConfig", num_env_steps=200_000, eval_interval=40)  # every 20,480 env steps
alf.config("TrainerConfig", num_eval_episodes=10, num_eval_environments=10, summary_interval=10)
