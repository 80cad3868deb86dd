"""A short version of ``alf/examples/ppo_rnn_memory_conf.py`` for the export tests: the same
LSTM PPO on ``RepeatFirstObservation-v0``, with 8 envs, 16 LSTM units and no evaluation;
``num_iterations`` is set by the test (about 30 iterations solve the task)."""

import functools

import alf
from alf.networks.rnn_networks import ActorDistributionRNNNetwork, ValueRNNNetwork

alf.import_config("ppo_rnn_memory_conf.py")

alf.config("create_environment", num_parallel_environments=8)
alf.config(
    "PPOAlgorithm",
    actor_network_ctor=functools.partial(
        ActorDistributionRNNNetwork, fc_layer_params=(16,), lstm_hidden_size=16
    ),
    value_network_ctor=functools.partial(
        ValueRNNNetwork, fc_layer_params=(16,), lstm_hidden_size=16
    ),
)
alf.config(
    "TrainerConfig",
    num_env_steps=0,
    num_iterations=30,
    evaluate=False,
    summary_interval=10,
    num_checkpoints=1,
    random_seed=0,
    progress_bar=False,
)
