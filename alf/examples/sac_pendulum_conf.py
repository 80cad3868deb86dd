"""SAC on Pendulum-v1 (one env in the main process, one gradient step per env step).

Hyperparameters are Stable-Baselines3's SAC defaults with rl-baselines3-zoo's
Pendulum-v1 entry (which only sets ``learning_rate: 1e-3`` and 20,000 steps), so
the two can be compared directly (``benchmarks/sac_pendulum.py``): 256x256 ReLU
actor and twin critics, Adam lr 1e-3 for actor, critics and α, batch 256,
gamma 0.99, tau 0.005, automatic entropy tuning from α = 1 with target entropy
-dim(A) = -1, 100 steps before the first update (SB3's ``learning_starts``).
The replay buffer holds 100,000 steps instead of SB3's 1e6: the run only has
20,000. Typical result: eval AverageReturn around -150 after 10-20k steps.
"""

import functools

import torch

import alf
from alf.algorithms.config import TrainerConfig  # noqa: F401 (registers the configurable)
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork
from alf.algorithms.td_loss import OneStepTDLoss
from alf.environments import utils as env_utils  # noqa: F401
from alf.networks.critic_networks import CriticNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="Pendulum-v1",
    num_parallel_environments=1,
    nonparallel=True,
)

hidden = (256, 256)
lr = 1e-3
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
    actor_optimizer=Adam(lr=lr, name="actor_adam"),
    critic_optimizer=Adam(lr=lr, name="critic_adam"),
    alpha_optimizer=Adam(lr=lr, name="alpha_adam"),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=SacAlgorithm,
    unroll_length=1,
    mini_batch_length=2,
    mini_batch_size=256,
    num_updates_per_train_iter=1,
    whole_replay_buffer_training=False,
    clear_replay_buffer=False,
    replay_buffer_length=100_000,
    initial_collect_steps=100,
    num_env_steps=20_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=2000,
    num_eval_episodes=10,
    num_eval_environments=10,
    summary_interval=1000,
    num_checkpoints=2,
)
