"""The feed-forward twin of ``alf/examples/ppo_rnn_memory_conf.py``: same task, algorithm,
hidden sizes and budget, with MLP actor and value networks (no memory)."""

import functools

import alf
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.value_networks import ValueNetwork

alf.import_config("ppo_rnn_memory_conf.py")
alf.config(
    "PPOAlgorithm",
    actor_network_ctor=functools.partial(ActorDistributionNetwork, fc_layer_params=(32, 32)),
    value_network_ctor=functools.partial(ValueNetwork, fc_layer_params=(32, 32)),
)
alf.config("TrainerConfig", trajectory_mini_batches=False, mini_batch_length=1, mini_batch_size=320)
