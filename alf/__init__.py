"""alf: an ALF-style, configurable reinforcement-learning framework on PyTorch.

The top-level namespace holds the configuration API (``alf.config``,
``alf.configurable``, ...) so that conf files need nothing but ``import alf``.
"""

from alf.config_util import (
    config,
    config1,
    configurable,
    define_config,
    get_all_config_names,
    get_config_value,
    get_inoperative_configs,
    get_operative_configs,
    import_config,
    load_config,
    repr_wrapper,
    reset_configs,
)

__all__ = [
    "config",
    "config1",
    "configurable",
    "define_config",
    "get_all_config_names",
    "get_config_value",
    "get_inoperative_configs",
    "get_operative_configs",
    "import_config",
    "load_config",
    "repr_wrapper",
    "reset_configs",
]

__version__ = "0.1.0"

_SUBMODULE_ALIASES = {"math": "alf.utils.math_ops", "nn": "alf.networks"}
"""ALF's short names of modules: ``alf.math`` is ``alf.utils.math_ops``, ``alf.nn`` is
``alf.networks``."""


def __getattr__(name):
    """ALF's attribute access to alf's packages after only ``import alf`` (PEP 562):
    ``alf.optimizers.Adam(...)``, ``alf.networks.ValueNetwork``, ``alf.math.clipped_exp``,
    ``alf.nest``... The package is imported on first access, so ``import alf`` stays light.
    """
    import importlib.util

    module = _SUBMODULE_ALIASES.get(name, f"alf.{name}")
    if name.startswith("_") or importlib.util.find_spec(module) is None:
        raise AttributeError(f"module 'alf' has no attribute '{name}'")
    value = importlib.import_module(module)
    globals()[name] = value
    return value
