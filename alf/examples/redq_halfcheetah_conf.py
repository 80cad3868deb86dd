"""REDQ on MuJoCo HalfCheetah-v5 (needs ``pip install -e '.[mujoco]'``), the paper's settings.

Randomized ensembled double Q-learning (``alf.algorithms.redq_algorithm``; Chen et al.
2021): an ensemble of N = 10 critics, targets from the minimum of M = 2 of them drawn at
random in every update, the actor maximizing the ensemble's mean; an update-to-data
ratio G = 20 (20 gradient steps per env step); 256x256 ReLU actor and critics, Adam lr
3e-4, batch 256, gamma 0.99, tau 0.005, automatic entropy tuning with target entropy
-dim(A), 5,000 uniformly random steps before the first update, 300k env steps (the
paper's horizon). With G = 20 an env step costs about 20 SAC updates: lower it with
``--conf_param TrainerConfig.num_updates_per_train_iter=5``.
"""

import functools

import torch

import alf
from alf.algorithms.redq_algorithm import RedqAlgorithm
from alf.algorithms.sac_algorithm import SquashedNormalActorNetwork
from alf.algorithms.td_loss import OneStepTDLoss
from alf.initializers import torch_default_init
from alf.networks.critic_networks import CriticNetwork

alf.import_config("sac_sb3_conf.py")

alf.config("create_environment", env_name="HalfCheetah-v5")
hidden = (256, 256)
alf.config(
    "RedqAlgorithm",
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
    critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=0.99),
    num_critic_replicas=10,
    num_min=2,
    random_initial_collect=True,
)
alf.config("NormalProjectionNetwork", kernel_initializer=torch_default_init)  # mean/std heads
alf.config(
    "TrainerConfig",
    algorithm_ctor=RedqAlgorithm,
    num_updates_per_train_iter=20,
    initial_collect_steps=5_000,
    num_env_steps=300_000,
    eval_interval=5_000,
    num_eval_episodes=5,
    num_eval_environments=5,
    num_checkpoints=10,
)
