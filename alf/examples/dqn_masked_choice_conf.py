"""DQN on ``MaskedChoice-v0``: greedy and random actions among the legal ones (seconds).

The env and its optimum (10) are those of ``ppo_masked_choice_conf.py``. DQN's Q network
reads the ranks only; the greedy action, the epsilon-greedy random action and the
bootstrap action of the target are restricted to the legal actions of their state
(``alf/utils/action_mask.py``).
"""

import functools

import alf
from alf.algorithms.dqn_algorithm import DqnAlgorithm
from alf.environments import masked_choice
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="alf.environments.masked_choice:MaskedChoice-v0",
    num_parallel_environments=8,
    nonparallel=True,
)
del masked_choice  # imported to register the id

alf.config(
    "DqnAlgorithm",
    q_network_ctor=functools.partial(QNetwork, fc_layer_params=(32,)),
    gamma=0.9,
    rollout_epsilon_greedy=0.1,
    optimizer=Adam(lr=3e-3),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=DqnAlgorithm,
    unroll_length=4,
    mini_batch_length=2,
    mini_batch_size=64,
    num_updates_per_train_iter=1,
    whole_replay_buffer_training=False,
    clear_replay_buffer=False,
    replay_buffer_length=1000,
    initial_collect_steps=16,
    num_iterations=200,
    evaluate=True,
    eval_interval=50,
    num_eval_episodes=16,
    num_eval_environments=8,
    summary_interval=50,
    num_checkpoints=2,
)
