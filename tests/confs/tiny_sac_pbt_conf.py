"""A seconds-long SAC run as a PBT member, for the off-policy PBT tests.

SAC (16-unit actor and twin critics, one Adam lr that PBT mutates) on two
``ContinuousCountingEnv`` (5-step episodes, reward = the sum of the previous action, so
the objective is finite after 3 iterations), 4 steps per env per iteration (8 env steps),
a 64-step replay buffer per env filled from the start (``initial_collect_steps`` 4),
8 iterations, and a PBT check every 32 env steps (4 iterations) that decides from the
start. ``PBTConfig.replay_buffer_on_exploit`` is left to the tests.
"""

import functools

import torch

import alf
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork
from alf.algorithms.td_loss import OneStepTDLoss
from alf.networks.critic_networks import CriticNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="alf.environments.toy_envs:ContinuousCountingEnv-v0",
    num_parallel_environments=2,
    nonparallel=True,
)
hidden = (16,)
alf.config(
    "SacAlgorithm",
    actor_network_ctor=functools.partial(
        SquashedNormalActorNetwork, fc_layer_params=hidden, activation=torch.relu_
    ),
    critic_network_ctor=functools.partial(
        CriticNetwork, joint_fc_layer_params=hidden, activation=torch.relu_
    ),
    critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=0.9),
    actor_optimizer=Adam(lr=1e-3, name="actor_adam"),
    critic_optimizer=Adam(lr=1e-3, name="critic_adam"),
    alpha_optimizer=Adam(lr=1e-3, name="alpha_adam"),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=SacAlgorithm,
    unroll_length=4,
    mini_batch_length=2,
    mini_batch_size=16,
    num_updates_per_train_iter=1,
    replay_buffer_length=64,
    initial_collect_steps=4,
    num_env_steps=0,
    num_iterations=8,
    checkpoint_interval=4,
    evaluate=False,
    summary_interval=1,
    random_seed=1,
    progress_bar=False,
)
alf.config(
    "PBTConfig",
    interval_steps=32,
    start_after=0,
    initial_delay=0,
    mutation={"Adam.lr": {"kind": "perturb", "min": 1e-6, "max": 1e-1}},
)
