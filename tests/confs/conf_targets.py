"""Configurables that the conf files in this directory configure.

tests/configuration/configurables.py loads this file as the module ``conf_targets``, so the
conf files can ``import conf_targets`` without any change to ``sys.path``.
"""

import dataclasses

import alf


@alf.configurable
@dataclasses.dataclass
class CfgOptimizer:
    """A stand-in optimizer: a dataclass, so equal settings compare equal."""

    lr: float = 0.1
    momentum: float = 0.0


@alf.configurable
class CfgToyNet:
    """A stand-in network."""

    def __init__(self, hidden_size=8, activation="relu", optimizer=None):
        self.hidden_size = hidden_size
        self.activation = activation
        self.optimizer = optimizer


@alf.configurable
def cfg_make_pair(a, b=2, c=3):
    """Returns its arguments."""
    return a, b, c


@alf.configurable
def cfg_train(net_ctor=CfgToyNet, num_iterations=1):
    """Builds a net with ``net_ctor`` and reports what it was built with."""
    net = net_ctor()
    return {
        "net_type": type(net).__name__,
        "hidden_size": net.hidden_size,
        "activation": net.activation,
        "optimizer": net.optimizer,
        "num_iterations": num_iterations,
        "pair": cfg_make_pair(1),
    }
