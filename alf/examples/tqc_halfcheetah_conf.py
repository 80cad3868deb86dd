"""TQC on MuJoCo HalfCheetah-v5 (needs ``pip install -e '.[mujoco]'``), sb3-contrib's TQC.

Truncated quantile critics (``alf.algorithms.tqc_algorithm``) with sb3-contrib's TQC
defaults and rl-baselines3-zoo's MuJoCo entry (``learning_starts: 10000``): 2 critics of
25 quantiles each, the target drops the 2 × 2 largest of the 50 pooled quantiles;
256x256 ReLU actor and critics with PyTorch's default ``nn.Linear`` init (as
``sac_halfcheetah_conf.py``), Adam lr 3e-4 for actor, critics and α, batch 256, gamma 0.99,
tau 0.005, replay buffer 1e6, one gradient step per env step, automatic entropy tuning
from α = 1, 1e6 env steps. The paper (Kuznetsov et al. 2020) uses 5 critics of 3 × 512
and drops none on HalfCheetah: ``--conf_param TqcAlgorithm.num_critic_replicas=5
--conf_param TqcAlgorithm.top_quantiles_to_drop_per_net=0``.
"""

import functools

import torch

import alf
from alf.algorithms.quantile_td_loss import OneStepTDQRLoss
from alf.algorithms.sac_algorithm import SquashedNormalActorNetwork
from alf.algorithms.tqc_algorithm import TqcAlgorithm
from alf.initializers import torch_default_init
from alf.networks.critic_networks import CriticNetwork

alf.import_config("sac_sb3_conf.py")

alf.config("create_environment", env_name="HalfCheetah-v5")
hidden = (256, 256)
alf.config(
    "TqcAlgorithm",
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
    critic_loss_ctor=functools.partial(OneStepTDQRLoss, gamma=0.99),
    num_critic_replicas=2,
    num_quantiles=25,
    top_quantiles_to_drop_per_net=2,
)
alf.config("NormalProjectionNetwork", kernel_initializer=torch_default_init)  # mean/std heads
alf.config(
    "TrainerConfig",
    algorithm_ctor=TqcAlgorithm,
    initial_collect_steps=10_000,
    num_env_steps=1_000_000,
    eval_interval=10_000,
    num_eval_episodes=5,
    num_eval_environments=5,
    num_checkpoints=10,
)
