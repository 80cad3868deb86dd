"""Configurables shared by the tests of ``alf.configuration`` (and ``conf_targets``).

Defined here, in an importable module, so that ``operative_config_str`` can write them
as ``tests.configuration.configurables.Name`` and the written conf runs again.
"""

import collections
import importlib.util
import os
import sys

import alf

CONF_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "confs")


def _load_conf_targets():
    """Load tests/confs/conf_targets.py as the module ``conf_targets`` (once)."""
    if "conf_targets" not in sys.modules:
        path = os.path.join(CONF_DIR, "conf_targets.py")
        spec = importlib.util.spec_from_file_location("conf_targets", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["conf_targets"] = module
        spec.loader.exec_module(module)
    return sys.modules["conf_targets"]


targets = _load_conf_targets()


@alf.configurable
def cfg_scale(x, factor=2.0, offset=0.0):
    """Returns ``x * factor + offset``."""
    return x * factor + offset


@alf.configurable
def cfg_zz_schedule(start=1.0, end=0.0):
    return start, end


@alf.configurable
class CfgAgent:
    """An agent with configurable knobs."""

    def __init__(self, gamma=0.99, num_envs=1):
        self.gamma = gamma
        self.num_envs = num_envs


class CfgPlainSubAgent(CfgAgent):
    """Not decorated: its ``super().__init__`` uses CfgAgent's configuration."""

    def __init__(self, depth=3, **kwargs):
        super().__init__(**kwargs)
        self.depth = depth


@alf.configurable
class CfgDecoratedSubAgent(CfgAgent):
    """Decorated without its own ``__init__``: configured separately from CfgAgent."""


@alf.configurable("pkg_a.utils.cfg_ambig")
def cfg_ambig_a(x=1):
    return x


@alf.configurable("pkg_b.utils.cfg_ambig")
def cfg_ambig_b(x=1):
    return x


@alf.configurable("deep.pkg_c.tools.cfg_deep")
def cfg_deep(x=-1):
    return x


@alf.configurable(whitelist=["lr"])
def cfg_white(lr=0.1, eps=1e-8):
    return lr, eps


@alf.configurable(blacklist=["eps"])
def cfg_black(lr=0.1, eps=1e-8):
    return lr, eps


@alf.configurable
class CfgPoint(collections.namedtuple("CfgPointBase", ["x", "y"])):
    """A named tuple: its ``__new__`` is configured."""


@alf.repr_wrapper
class CfgNormal:
    def __init__(self, loc, scale=1.0):
        self.loc = loc
        self.scale = scale


class Opaque:
    """Has no Python source form."""

    def __repr__(self):
        return "<Opaque\nobject>"
