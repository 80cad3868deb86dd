"""The configured values of this process, carried into another one.

An environment worker (``ProcessEnvironment``) is a fresh process (forkserver or spawn):
it imports alf anew, with nothing configured. Code that runs there reads configured
values too: ``suite_gym.load``'s wrappers and time limit, a wrapper's arguments
(``DMAtariPreprocessing.frame_skip``), anything the env constructor calls. The parent
exports its values with ``export_configs`` and the worker applies them with
``import_configs`` before it builds the env, so a value configured for the run is the
same in every process.

What is carried: every configured argument of a registered configurable (by full name),
every ``define_config`` value and gin macro, the gin-scoped values and the values still
pending (their target registers when the worker imports its module), each with its
``mutable`` flag. Each value is pickled on its own (cloudpickle, so lambdas and classes
of a conf file travel by value): one that cannot be pickled or unpickled is left out
with a warning naming it, instead of failing the env.
"""

from __future__ import annotations

import cloudpickle
from absl import logging

from alf.configuration import scopes
from alf.configuration.binding import assign, config1, config_scoped
from alf.configuration.registry import DEFINED, MACROS, PENDING, REGISTRY, Slot

_WARNED: set[str] = set()  # names already warned about in this process


def _warn_once(name: str, what: str, error: Exception) -> None:
    if name not in _WARNED:
        _WARNED.add(name)
        logging.warning(
            "Configured value '%s' is not carried into env worker processes: it cannot be "
            "%s (%s: %s).",
            name,
            what,
            type(error).__name__,
            error,
        )


def _entries():
    """``(kind, name, value, mutable)`` of every configured value (kind: 'config',
    'macro' or 'scoped' with ``name = (scope, 'Full.Name.arg')``)."""
    for entry in REGISTRY.values():
        for pending in entry.configured_as_pending():
            yield "config", pending.name, pending.value, pending.mutable
    for name, slot in DEFINED.items():
        if slot.configured:
            yield "config", name, slot.value, slot.mutable
    for name, slot in MACROS.items():
        if slot.configured:
            yield "macro", name, slot.value, slot.mutable
    for (scope, full_name), slots in scopes.SCOPED.items():
        for arg, slot in slots.items():
            if slot.configured:
                yield "scoped", (scope, f"{full_name}.{arg}"), slot.value, slot.mutable
    for pending in PENDING:
        yield "config", pending.name, pending.value, pending.mutable


def export_value(value) -> bytes:
    """One value as ``export_configs`` carries it."""
    return cloudpickle.dumps(value)


def export_configs() -> list[tuple]:
    """The configured values as ``[(kind, name, pickled value, mutable)]``."""
    exported = []
    for kind, name, value, mutable in _entries():
        try:
            exported.append((kind, name, export_value(value), mutable))
        except Exception as error:  # noqa: BLE001 (any pickling failure: leave it out)
            _warn_once(_label(name), "pickled", error)
    return exported


def import_configs(exported: list[tuple]) -> None:
    """Apply ``export_configs()``'s values in this (fresh) process."""
    for kind, name, data, mutable in exported:
        try:
            value = cloudpickle.loads(data)
        except Exception as error:  # noqa: BLE001 (e.g. a module the worker lacks)
            _warn_once(_label(name), "unpickled in the worker", error)
            continue
        if kind == "scoped":
            try:  # scoped values need their configurable now (no pending scoped values)
                config_scoped(name[0], name[1], value, mutable=mutable)
            except ValueError as error:
                _warn_once(_label(name), "bound in the worker", error)
        elif kind == "macro":
            slot = MACROS.setdefault(name, Slot())
            assign(slot, name, value, mutable, raise_if_used=False)
        else:
            config1(name, value, mutable=mutable, raise_if_used=False)


def _label(name) -> str:
    return "/".join(name) if isinstance(name, tuple) else name
