"""SAC on MuJoCo HalfCheetah-v5 (needs ``pip install -e '.[mujoco]'``).

Switch the task with ``--conf_param "create_environment.env_name='Hopper-v5'"``
(or ``'Walker2d-v5'``, ``'Ant-v5'``). Hyperparameters are rl-baselines3-zoo's
SAC MuJoCo entry (``learning_starts: 10000``, everything else Stable-Baselines3's
SAC defaults, ``sac_sb3_conf.py``): 256x256 ReLU actor and twin critics, Adam lr 3e-4
for actor, critics and α, batch 256, gamma 0.99, tau 0.005, replay buffer 1e6, one
gradient step per env step, automatic entropy tuning from α = 1 with target entropy
-dim(A), 1e6 env steps. One env in the main process.

Weights start with PyTorch's default ``nn.Linear`` init in every layer (as
Stable-Baselines3). With alf's default variance-scaling init the untrained
tanh-Gaussian policy saturates on HalfCheetah's unnormalized observations (on
1,000 random-action states: entropy estimate -3.95, 15% of action entries at
|a| > 0.99; with this init +2.90 and 3.5%), and SAC learned much more slowly:
seed 0's eval return after 100k steps was 2,644 with alf's init and 5,756 with
this one (SB3: 4,218; benchmarks/RESULTS.md, "SAC HalfCheetah-v5").
"""

import functools

import torch

import alf
from alf.algorithms.sac_algorithm import SquashedNormalActorNetwork
from alf.initializers import torch_default_init
from alf.networks.critic_networks import CriticNetwork

alf.import_config("sac_sb3_conf.py")

alf.config("create_environment", env_name="HalfCheetah-v5")
hidden = (256, 256)
alf.config(
    "SacAlgorithm",
    actor_network_ctor=functools.partial(
        SquashedNormalActorNetwork,
        fc_layer_params=hidden,
        activation=torch.relu_,
        kernel_initializer=torch_default_init,
    ),
    critic_network_ctor=functools.partial(
        CriticNetwork,
        joint_fc_layer_params=hidden,
        activation=torch.relu_,
        kernel_initializer=torch_default_init,
        last_kernel_initializer=torch_default_init,
    ),
)
alf.config("NormalProjectionNetwork", kernel_initializer=torch_default_init)  # mean/std heads
alf.config(
    "TrainerConfig",
    initial_collect_steps=10_000,
    num_env_steps=1_000_000,
    eval_interval=10_000,
    num_eval_episodes=5,
    num_eval_environments=5,
    num_checkpoints=10,
)
