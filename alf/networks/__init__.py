"""Neural networks used by algorithms.

The public classes are importable from the package, with ALF's names, e.g.
``from alf.networks import ActorDistributionNetwork, ValueNetwork``. Every module of
the package needs torch, so they are imported with it.
"""

from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.actor_networks import ActorNetwork
from alf.networks.cells import GRUCell, LSTMCell
from alf.networks.containers import Branch, Echo, Parallel, Residue, Sequential
from alf.networks.critic_networks import CriticNetwork
from alf.networks.critic_quantile_networks import CriticQuantileNetwork
from alf.networks.disjoint_policy_value_network import DisjointPolicyValueNetwork
from alf.networks.encoding_networks import EncodingNetwork, NestConcat
from alf.networks.image_networks import ImageDecodingNetwork, ImageEncodingNetwork
from alf.networks.latent_actor_networks import (
    LatentActorDistributionNetwork,
    UnitNormalActorDistributionNetwork,
)
from alf.networks.network import Network, NetworkWrapper, wrap_as_network
from alf.networks.normalizing_flow_networks import RealNVPNetwork
from alf.networks.ou_process import OUProcess
from alf.networks.projection_networks import (
    BetaProjectionNetwork,
    CategoricalProjectionNetwork,
    CauchyProjectionNetwork,
    NormalProjectionNetwork,
    StableNormalProjectionNetwork,
    TruncatedProjectionNetwork,
)
from alf.networks.q_networks import QNetwork
from alf.networks.rnn_networks import (
    ActorDistributionRNNNetwork,
    GRUEncodingNetwork,
    LSTMEncodingNetwork,
    ValueRNNNetwork,
)
from alf.networks.value_networks import ValueNetwork

__all__ = [
    "LatentActorDistributionNetwork",
    "RealNVPNetwork",
    "UnitNormalActorDistributionNetwork",
    "Branch",
    "Echo",
    "GRUCell",
    "LSTMCell",
    "NetworkWrapper",
    "Parallel",
    "Residue",
    "Sequential",
    "wrap_as_network",
    "ActorDistributionNetwork",
    "ActorDistributionRNNNetwork",
    "ActorNetwork",
    "BetaProjectionNetwork",
    "CauchyProjectionNetwork",
    "CategoricalProjectionNetwork",
    "CriticNetwork",
    "CriticQuantileNetwork",
    "DisjointPolicyValueNetwork",
    "EncodingNetwork",
    "ImageDecodingNetwork",
    "ImageEncodingNetwork",
    "GRUEncodingNetwork",
    "LSTMEncodingNetwork",
    "NestConcat",
    "Network",
    "NormalProjectionNetwork",
    "OUProcess",
    "QNetwork",
    "StableNormalProjectionNetwork",
    "TruncatedProjectionNetwork",
    "ValueNetwork",
    "ValueRNNNetwork",
]
