"""Recurrent PPO on a memory task: ``RepeatFirstObservation-v0`` (alf/environments/memory_env.py).

The cue is visible only in an episode's first observation and must be repeated
``delay`` steps later: an LSTM policy learns it (return 1); the feed-forward
twin (``--conf_param 'PPOAlgorithm.actor_network_ctor=...'`` or
``ppo_ff_memory_conf.py`` in ``tests/confs``) cannot beat guessing (return 0).

Training on sequences: whole episode segments (``trajectory_mini_batches``), each
started from the recurrent state stored at rollout, zero-padded to the longest in
the minibatch and masked. The ALF-style alternative, fixed ``mini_batch_length``
pieces with ``use_rollout_state``, learns reliably only when a piece spans the cue
and the answer (``mini_batch_length`` >= ``delay + 2``): otherwise no gradient
reaches the step that saw the cue. See docs/recurrent_ppo.md.
"""

import functools

import alf
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.networks.rnn_networks import ActorDistributionRNNNetwork, ValueRNNNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="alf.environments.memory_env:RepeatFirstObservation-v0",
    num_parallel_environments=16,
    nonparallel=True,
)
alf.config("PPOLoss", gamma=0.99, td_lambda=0.95, entropy_regularization=0.01)
alf.config(
    "PPOAlgorithm",
    actor_network_ctor=functools.partial(
        ActorDistributionRNNNetwork, fc_layer_params=(32,), lstm_hidden_size=(32,)
    ),
    value_network_ctor=functools.partial(
        ValueRNNNetwork, fc_layer_params=(32,), lstm_hidden_size=(32,)
    ),
    loss_class=PPOLoss,
    optimizer=Adam(lr=3e-3, eps=1e-5, gradient_clipping=0.5),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPOAlgorithm,
    unroll_length=20,
    trajectory_mini_batches=True,
    mini_batch_size=32,
    num_updates_per_train_iter=4,
    num_env_steps=40_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=10,
    num_eval_episodes=32,
    num_eval_environments=16,
    summary_interval=10,
    num_checkpoints=2,
)
