"""Public names of a package that are imported from its modules on first access.

A package whose ``__init__`` imported all its modules would make importing any one of
them import them all (``import alf.algorithms.config``, torch-free on its own, would
load every algorithm and torch), and would make the modules' import order matter.
With ``lazy_exports`` the package defines module-level ``__getattr__`` and ``__dir__``
(PEP 562): ``from alf.algorithms import PPOAlgorithm`` imports ``ppo_algorithm`` then,
and only then.

Example (in a package's ``__init__.py``)::

    _EXPORTS = {"ppo_algorithm": ("PPOAlgorithm",), "config": ("TrainerConfig",)}
    __all__ = ["PPOAlgorithm", "TrainerConfig"]
    __getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
"""

import importlib


def lazy_exports(package_globals, names_by_module, submodules=()):
    """Module-level ``__getattr__`` and ``__dir__`` for a package with lazy exports.

    Args:
        package_globals (dict): the package's ``globals()``; a name, once imported, is
            stored there, so later lookups do not go through ``__getattr__``.
        names_by_module (dict[str, tuple[str, ...]]): module name relative to the
            package (e.g. ``'ppo_algorithm'``) -> the public names taken from it.
        submodules (Iterable[str]): modules of the package that are themselves public
            names (``from alf.environments import suite_gym``).

    Returns:
        tuple[Callable, Callable]: ``(__getattr__, __dir__)`` to assign in the package.

    Raises:
        ValueError: if a name is listed twice.
    """
    package = package_globals["__name__"]
    submodules = tuple(submodules)
    module_of = {name: name for name in submodules}
    for module, names in names_by_module.items():
        for name in names:
            if name in module_of:
                raise ValueError(f"'{name}' is exported twice by package '{package}'.")
            module_of[name] = module

    def __getattr__(name):
        if name not in module_of:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        module = importlib.import_module(f"{package}.{module_of[name]}")
        value = module if name in submodules else getattr(module, name)
        package_globals[name] = value
        return value

    def __dir__():
        return sorted(set(package_globals) | set(module_of))

    return __getattr__, __dir__
