"""Stable-Baselines3's SAC defaults in alf: the base of ``sac_pendulum_conf.py`` and
``sac_halfcheetah_conf.py`` (not a task by itself: it sets no environment).

256x256 ReLU actor (tanh-squashed Gaussian) and twin critics, Adam lr 3e-4 for actor,
critics and α, batch 256, gamma 0.99, Polyak tau 0.005 every update, automatic entropy
tuning from α = 1 (log α = 0) with target entropy -dim(A), one env, one gradient step
per env step, replay buffer 1e6, 100 steps collected before the first update.
A task conf imports it (``alf.import_config("sac_sb3_conf.py")``) and configures only what
differs; a later ``alf.config`` of the same argument wins.
"""

import functools

import torch

import alf
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork
from alf.algorithms.td_loss import OneStepTDLoss
from alf.networks.critic_networks import CriticNetwork
from alf.optimizers import Adam

alf.config("create_environment", num_parallel_environments=1, nonparallel=True)

hidden = (256, 256)
alf.config(
    "SacAlgorithm",
    actor_network_ctor=functools.partial(
        SquashedNormalActorNetwork, fc_layer_params=hidden, activation=torch.relu_
    ),
    critic_network_ctor=functools.partial(
        CriticNetwork, joint_fc_layer_params=hidden, activation=torch.relu_
    ),
    num_critic_replicas=2,
    critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=0.99),
    initial_log_alpha=0.0,
    target_update_tau=0.005,
    target_update_period=1,
    # Named, so their gradient-norm summaries (grad_norm/<name>) do not collide.
    actor_optimizer=Adam(lr=3e-4, name="actor_adam"),
    critic_optimizer=Adam(lr=3e-4, name="critic_adam"),
    alpha_optimizer=Adam(lr=3e-4, name="alpha_adam"),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=SacAlgorithm,
    unroll_length=1,
    mini_batch_length=2,  # one transition per sequence
    mini_batch_size=256,
    num_updates_per_train_iter=1,
    replay_buffer_length=1_000_000,
    initial_collect_steps=100,
    num_iterations=0,
    evaluate=True,
    summary_interval=1000,
)
