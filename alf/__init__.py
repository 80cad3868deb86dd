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
