"""alf's configuration registry: ``alf.configurable``, ``alf.config`` and conf files.

A conf file (Python or gin) sets *default* values for the arguments of functions and
classes decorated with ``@alf.configurable``; explicit arguments at the call site always
win. Every configurable is registered under its full name ``module.QualName`` and can be
named by any unambiguous dot-boundary suffix of it, e.g. ``create_environment``,
``utils.create_environment`` or ``alf.environments.utils.create_environment``.

Example::

    import alf

    alf.config('create_environment', num_parallel_environments=8)  # may precede the import
    alf.define_config('unroll_length', 32)
    alf.config('TrainerConfig', unroll_length=alf.get_config_value('unroll_length'))

Values set for a configurable that is not registered yet are kept *pending* and bound when
a configurable with a matching name registers; ``validate_pending_configs()`` reports the
ones that never found a target. gin files are read with gin-config's parser only: their
bindings, ``@Name`` references and ``%MACRO`` values land in this same registry.

This module is the public import point; the implementation is the package
``alf.configuration``, split by job:

- ``registry``: the registry state, suffix name lookup, gin reference values.
- ``catalog``: which module defines each of alf's own configurables, so that
  ``alf.config('TrainerConfig', ...)`` finds its target without an import in the conf.
- ``binding``: setting and reading values, pending values, ``define_config``.
- ``decorator``: ``@configurable``.
- ``gin_reader``: reading gin statements (gin is imported only when one is parsed).
- ``loader``: conf files, ``--conf_param`` and ``--gin_param``.
- ``writer``: operative / inoperative reports, ``operative_config_str``, ``repr_wrapper``.
- ``typecheck``: every configured value checked against its configurable's signature
  (run by ``validate_pending_configs``).
- ``argtypes``: what an argument's annotation may declare beyond plain types: ranges
  (``Discount``, ``Count``, ``LearningRate``, ...), schedules, ``Flag``.

These modules must stay light to import (no torch, no gin): ``alf/__init__.py``
re-exports this one.
"""

from alf.configuration import loader, registry
from alf.configuration.binding import (
    check_command_line_applied,
    config,
    config1,
    define_config,
    get_all_config_names,
    get_config_value,
    validate_pending_configs,
)
from alf.configuration.decorator import configurable
from alf.configuration.loader import (
    apply_conf_params,
    apply_gin_params,
    get_loaded_conf_files,
    import_config,
    load_config,
    parse_conf_param,
)
from alf.configuration.writer import (
    DEFINED_CONFIGS_KEY,
    get_inoperative_configs,
    get_operative_configs,
    operative_config_str,
    repr_wrapper,
)

__all__ = [
    "DEFINED_CONFIGS_KEY",
    "apply_conf_params",
    "apply_gin_params",
    "check_command_line_applied",
    "config",
    "config1",
    "configurable",
    "define_config",
    "get_all_config_names",
    "get_config_value",
    "get_inoperative_configs",
    "get_loaded_conf_files",
    "get_operative_configs",
    "import_config",
    "load_config",
    "operative_config_str",
    "parse_conf_param",
    "repr_wrapper",
    "reset_configs",
    "validate_pending_configs",
]


def reset_configs():
    """Clear every configured value, used flag, pending value, defined config, gin macro
    and the record of loaded conf files. Registered configurables stay registered."""
    registry.reset_registry()
    loader.forget_loaded_conf_files()
