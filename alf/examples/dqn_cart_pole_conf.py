"""DQN on CartPole-v1 (a few minutes on a 2-core CPU).

Hyperparameters follow the rl-baselines3-zoo settings for Stable-Baselines3 DQN
on CartPole-v1 (hyperparams/dqn.yml: 5e4 steps, lr 2.3e-3, batch 64, buffer
100k, learning_starts 1000, gamma 0.99, target_update_interval 10, train_freq
256, gradient_steps 128, exploration_fraction 0.16, exploration_final_eps 0.04,
net [256, 256]; SB3's defaults: Huber loss, max_grad_norm 10, hard target
updates), so the two can be compared directly
(``python -m benchmarks.vs_sb3 --task dqn_cart_pole``).
How the SB3 knobs map onto alf's:

- ``train_freq=256, gradient_steps=128`` → ``unroll_length=256``,
  ``num_updates_per_train_iter=128``, ``mini_batch_size=64``.
- ``target_update_interval=10`` env steps with ``tau=1``: SB3 copies the online
  network every 10 env steps *during collection*, when it does not change, so
  the 128 gradient steps of a training phase all use the network as it was
  after the previous phase. ``target_update_tau=1, target_update_period=128``
  (one copy after each phase) is the same schedule.
- ``exploration_fraction=0.16, exploration_final_eps=0.04`` →
  ``rollout_epsilon_greedy=[(0, 1.0), (0.16, 0.04)]`` over the training progress
  (env steps / ``num_env_steps``), updated once per iteration instead of per step.
- ``learning_starts=1000`` → ``initial_collect_steps=1000`` with
  ``random_initial_collect`` (uniformly random actions until then; alf's first
  1,024 steps are random, SB3's first 1,000).
- SB3's DQN is Nature DQN, so ``double_dqn=False`` here (alf's default is double
  DQN); ``n_step=1``.

- Weights: torch's default ``nn.Linear`` init (SB3's, ``kaiming_uniform_(a=sqrt(5))``)
  instead of alf's He (variance-scaling) default. With alf's default, 1 of 3
  seeds reached eval return 475 within the 5e4 steps; with torch's, 3 of 3 (SB3:
  3 of 3) — see benchmarks/RESULTS.md. Biases start at 0 (torch: uniform).

Deviation: evaluation runs every 10 iterations (2,560 steps).
"""

import functools
import math

import torch

import alf
from alf.algorithms.dqn_algorithm import DqnAlgorithm
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="CartPole-v1",
    num_parallel_environments=1,
    nonparallel=True,  # CartPole is cheap: step it in the main process
)

#: torch.nn.Linear's default weight init: uniform in ±1 / sqrt(fan_in).
torch_linear_init = functools.partial(torch.nn.init.kaiming_uniform_, a=math.sqrt(5))
alf.config(
    "DqnAlgorithm",
    q_network_ctor=functools.partial(
        QNetwork,
        fc_layer_params=(256, 256),
        kernel_initializer=torch_linear_init,
        last_kernel_initializer=torch_linear_init,
    ),
    gamma=0.99,
    n_step=1,
    double_dqn=False,
    rollout_epsilon_greedy=[(0, 1.0), (0.16, 0.04)],
    random_initial_collect=True,
    target_update_tau=1.0,
    target_update_period=128,
    optimizer=Adam(lr=2.3e-3, gradient_clipping=10.0),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=DqnAlgorithm,
    unroll_length=256,
    mini_batch_size=64,
    mini_batch_length=2,
    num_updates_per_train_iter=128,
    replay_buffer_length=100_000,
    initial_collect_steps=1000,
    num_env_steps=50_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=10,
    num_eval_episodes=10,
    num_eval_environments=1,
    summary_interval=10,
    num_checkpoints=5,
)
