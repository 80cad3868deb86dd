"""QR-DQN on CartPole-v1 (a few minutes on a 2-core CPU).

Hyperparameters follow the rl-baselines3-zoo settings for sb3-contrib's QR-DQN on
CartPole-v1 (hyperparams/qrdqn.yml: 5e4 steps, lr 2.3e-3, batch 64, buffer 100k,
learning_starts 1000, gamma 0.99, target_update_interval 10, train_freq 256,
gradient_steps 128, exploration_fraction 0.16, exploration_final_eps 0.04, net [256, 256],
n_quantiles 10) with sb3-contrib's QRDQN defaults (Adam with eps = 0.01 / batch_size, as the
QR-DQN paper; no gradient clipping; hard target updates; the target action greedy in the
target network's mean), so the two can be compared directly
(``python -m benchmarks.vs_sb3 --task qrdqn_cart_pole``). The knobs map onto alf's as in
``dqn_cart_pole_conf.py`` (the same zoo settings for DQN):

- ``train_freq=256, gradient_steps=128`` → ``unroll_length=256``,
  ``num_updates_per_train_iter=128``, ``mini_batch_size=64``.
- ``target_update_interval=10`` env steps with ``tau=1``: the copies happen during
  collection, so each training phase uses the network of the end of the previous one:
  ``target_update_tau=1, target_update_period=128``.
- ``exploration_fraction=0.16, exploration_final_eps=0.04`` →
  ``rollout_epsilon_greedy=[(0, 1.0), (0.16, 0.04)]`` (updated once per iteration).
- ``learning_starts=1000`` → ``initial_collect_steps=1000`` with ``random_initial_collect``.
- sb3-contrib's target picks the action with the target network: ``double_dqn=False``;
  ``n_step=1``.
- Weights: torch's default ``nn.Linear`` init (sb3-contrib's) for the weights; biases at 0.

Deviation: evaluation runs every 10 iterations (2,560 steps).
"""

import functools
import math

import torch

import alf
from alf.algorithms.qrdqn_algorithm import QrdqnAlgorithm
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="CartPole-v1",
    num_parallel_environments=1,
    nonparallel=True,  # CartPole is cheap: step it in the main process
)

BATCH_SIZE = 64
#: torch.nn.Linear's default weight init: uniform in ±1 / sqrt(fan_in).
torch_linear_init = functools.partial(torch.nn.init.kaiming_uniform_, a=math.sqrt(5))
alf.config(
    "QrdqnAlgorithm",
    q_network_ctor=functools.partial(
        QNetwork,
        fc_layer_params=(256, 256),
        num_quantiles=10,
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
    optimizer=Adam(lr=2.3e-3, eps=0.01 / BATCH_SIZE),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=QrdqnAlgorithm,
    unroll_length=256,
    mini_batch_size=BATCH_SIZE,
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
