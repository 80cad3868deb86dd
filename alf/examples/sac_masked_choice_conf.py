"""Discrete SAC without an actor on ``MaskedChoice-v0`` (seconds).

The env and its optimum (10) are those of ``ppo_masked_choice_conf.py``. The policy is
the critics' softmax :math:`\\pi(a|s) \\propto \\exp(\\min_i Q_i(s, a) / \\alpha)` over the
legal actions only; its entropy and the target's expectation over :math:`\\pi(\\cdot|s')`
are over the legal actions too (``alf/utils/action_mask.py``).
"""

import functools

import alf
from alf.algorithms.sac_algorithm import SacAlgorithm
from alf.algorithms.td_loss import OneStepTDLoss
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
    "SacAlgorithm",
    actor_network_ctor=None,
    critic_network_ctor=None,
    q_network_ctor=functools.partial(QNetwork, fc_layer_params=(32,)),
    critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=0.9),
    random_initial_collect=True,
    critic_optimizer=Adam(lr=3e-3),
    alpha_optimizer=Adam(lr=3e-3),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=SacAlgorithm,
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
