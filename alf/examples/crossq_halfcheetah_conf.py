"""CrossQ on MuJoCo HalfCheetah-v5 (needs ``pip install -e '.[mujoco]'``).

Hyperparameters are sb3-contrib's ``CrossQ`` defaults (2.9.2), which are
``CrossQAlgorithm``'s: 256x256 ReLU actor and 1024x1024 ReLU twin critics, each linear
layer reading a ``BatchRenorm1d(momentum=0.01, eps=1e-3, warmup_steps=100_000)``-normalized
input; no target critics; Adam lr 1e-3 with betas (0.5, 0.999) for actor and critics (α:
lr 1e-3, betas (0.9, 0.999)); the actor and α updated every 3rd critic update
(``policy_delay=3``); batch 256, gamma 0.99, replay buffer 1e6, one gradient step per env
step, automatic entropy tuning from α = 1 with target entropy -dim(A), uniformly random
actions for the first 100 steps (``learning_starts=100``); 1e6 env steps, one env.

Weights start with PyTorch's default ``nn.Linear`` init (as sb3-contrib), biases at 0.
"""

import functools

import alf
from alf.algorithms.crossq_algorithm import (
    CrossQActorNetwork,
    CrossQAlgorithm,
    CrossQCriticNetwork,
)
from alf.algorithms.td_loss import OneStepTDLoss
from alf.initializers import torch_default_init

alf.config(
    "create_environment",
    env_name="HalfCheetah-v5",
    num_parallel_environments=1,
    nonparallel=True,
)
alf.config(
    "CrossQAlgorithm",
    actor_network_ctor=functools.partial(CrossQActorNetwork, kernel_initializer=torch_default_init),
    critic_network_ctor=functools.partial(
        CrossQCriticNetwork,
        kernel_initializer=torch_default_init,
        last_kernel_initializer=torch_default_init,
    ),
    num_critic_replicas=2,
    critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=0.99),
    policy_delay=3,
    random_initial_collect=True,
)
alf.config("NormalProjectionNetwork", kernel_initializer=torch_default_init)  # mean/std heads
alf.config(
    "TrainerConfig",
    algorithm_ctor=CrossQAlgorithm,
    unroll_length=1,
    mini_batch_length=2,  # one transition per sequence
    mini_batch_size=256,
    num_updates_per_train_iter=1,
    replay_buffer_length=1_000_000,
    initial_collect_steps=100,
    num_env_steps=1_000_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=10_000,
    num_eval_episodes=5,
    num_eval_environments=5,
    summary_interval=1000,
    num_checkpoints=10,
)
