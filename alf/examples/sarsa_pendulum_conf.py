"""SARSA with a DDPG-style actor on Pendulum-v1: ALF's ``sarsa_ddpg_pendulum.gin`` in alf.

``SarsaAlgorithm`` (``alf/algorithms/sarsa_algorithm.py``) trains its twin critics
towards :math:`r_t + \\gamma d_t \\min_i Q'_i(s_t, \\mu(s_t) + n_t)`, the action the
exploring policy (OU noise) takes, and its deterministic actor through the critics, as
DDPG. The settings are ALF's: 256x256 actor (softsign squashing) and critics, AdamTF lr
1e-4 (actor) and 5e-4 (critics), target critics moved with tau 0.05 every 5 updates,
one env, one update of 128 transitions per env step from a replay buffer of 100,000
steps (``mini_batch_length=1`` with ``use_rollout_state``: each stored step holds the
previous observation), 1,000 steps collected first. Evaluation is greedy (ALF's conf
explores in 10% of its evaluation steps, ``TrainerConfig.epsilon_greedy=0.1``).

ALF's curve (``alf/examples/sarsa_ddpg_pendulum.png`` in ALF) passes -200 at about
8,000 steps.
"""

import functools

import alf
from alf.algorithms.sarsa_algorithm import SarsaAlgorithm
from alf.networks.actor_networks import ActorNetwork
from alf.networks.critic_networks import CriticNetwork
from alf.optimizers import AdamTF
from alf.utils.math_ops import softsign

alf.config(
    "create_environment", env_name="Pendulum-v1", num_parallel_environments=1, nonparallel=True
)

hidden = (256, 256)
alf.config(
    "SarsaAlgorithm",
    actor_network_ctor=functools.partial(
        ActorNetwork, fc_layer_params=hidden, squashing_func=softsign
    ),
    critic_network_ctor=functools.partial(CriticNetwork, joint_fc_layer_params=hidden),
    actor_optimizer=AdamTF(lr=1e-4, name="actor_adam"),
    critic_optimizer=AdamTF(lr=5e-4, name="critic_adam"),
    target_update_tau=0.05,
    target_update_period=5,
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=SarsaAlgorithm,
    whole_replay_buffer_training=False,
    clear_replay_buffer=False,
    unroll_length=1,
    mini_batch_length=1,
    use_rollout_state=True,
    mini_batch_size=128,
    num_updates_per_train_iter=1,
    replay_buffer_length=100_000,
    initial_collect_steps=1000,
    num_iterations=20_000,
    evaluate=True,
    eval_interval=1000,
    num_eval_episodes=10,
    num_eval_environments=10,
    num_checkpoints=2,
    summary_interval=100,
)
