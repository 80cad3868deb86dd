"""The configurables that alf itself defines, found by reading alf's source.

A conf file configures any of them by name without importing that module: with only
``import alf``, ``alf.config('TrainerConfig', unroll_length=8)`` works. When a name
matches no registered configurable, ``registry.find_configurable`` imports the modules
that define a configurable of that name (importing a module registers its configurables,
which binds the values set so far). A name that matches nothing stays pending until a
configurable of that name registers, as a user's own does when its module is imported.

The modules are found without importing anything: every module of the ``alf`` package
(but the command lines and the example confs) is read as text once, on the first lookup,
and a top-level ``class`` or ``def`` decorated with ``@alf.configurable`` is listed. So a
new configurable (an algorithm, a network, a wrapper) needs no list to be edited;
``tests/configuration/test_catalog.py`` checks that what is read here is exactly what
importing every alf module registers.
"""

from __future__ import annotations

import functools
import os
import re

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the alf package
_SKIPPED = ("bin", "examples")  # command lines and confs: they define no configurable
# ``@alf.configurable`` or ``@alf.configurable(...)`` at the top level (its arguments may
# span lines, with parentheses nested one deep), then any other decorators, then the
# ``class`` or ``def`` it decorates
_DECORATED = re.compile(
    r"^@alf\.configurable\b(?:\((?:[^()]|\([^()]*\))*\))?[^\n]*\n(?:@[^\n]*\n)*"
    r"(?:async\s+)?(?:class|def)\s+(\w+)",
    re.M,
)


@functools.lru_cache(maxsize=1)
def configurables() -> dict[str, tuple[str, ...]]:
    """Module name -> names (``__qualname__``) of the configurables that module defines."""
    found = {}
    for folder, dirs, files in os.walk(_ROOT):
        rel = os.path.relpath(folder, _ROOT)
        if rel.split(os.sep)[0] in _SKIPPED:
            dirs[:] = []
            continue
        dirs.sort()
        for name in sorted(f for f in files if f.endswith(".py")):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                names = tuple(_DECORATED.findall(f.read()))
            if names:
                parts = ["alf"] + ([] if rel == "." else rel.split(os.sep))
                stem = name[: -len(".py")]
                found[".".join(parts + ([] if stem == "__init__" else [stem]))] = names
    return found


def full_names():
    """``[(module, 'module.Name')]`` of every configurable alf defines."""
    return [
        (module, f"{module}.{name}") for module, names in configurables().items() for name in names
    ]
