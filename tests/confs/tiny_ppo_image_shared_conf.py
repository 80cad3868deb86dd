"""``tiny_ppo_image_conf.py`` with one conv encoder shared by linear actor and value heads
(``PPOAlgorithm.encoding_network_ctor``, as ``ppo_breakout_conf.py``), for the export tests
of a shared-encoder policy."""

import functools

import alf
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.encoding_networks import EncodingNetwork
from alf.networks.value_networks import ValueNetwork

alf.import_config("tiny_ppo_image_conf.py")

alf.config(
    "PPOAlgorithm",
    encoding_network_ctor=functools.partial(
        EncodingNetwork, conv_layer_params=((8, 3, 1), (8, 3, 2)), fc_layer_params=(16,)
    ),
    actor_network_ctor=ActorDistributionNetwork,
    value_network_ctor=ValueNetwork,
)
