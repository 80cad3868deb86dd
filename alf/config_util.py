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

This module must stay light to import (no torch): ``alf/__init__.py`` re-exports it.
"""

import ast
import contextlib
import difflib
import enum
import functools
import importlib
import importlib.util
import inspect
import math
import os
import re
import sys

from absl import logging

__all__ = [
    "DEFINED_CONFIGS_KEY",
    "apply_conf_params",
    "apply_gin_params",
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

DEFINED_CONFIGS_KEY = "<define_config>"
"""Name under which ``get_(in)operative_configs`` report the ``define_config`` values."""

_CONF_MODULE_PREFIX = "_alf_conf_"
_NAME_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_IDENTIFIER_RE = re.compile(r"^[A-Za-z_]\w*$")
_CONFIG_PATH_ENV = "ALF_CONFIG_PATH"
_EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples")


# --------------------------------------------------------------------------- state


class _Slot:
    """The configured state of one value: a configurable argument, a defined config or a
    gin macro."""

    __slots__ = ("configured", "default", "has_default", "lazy", "mutable", "used", "value")

    def __init__(self, default=inspect.Parameter.empty):
        self.has_default = default is not inspect.Parameter.empty
        self.default = default if self.has_default else None
        self.reset()

    def reset(self):
        """Forget the configured value and the used flag (the default stays)."""
        self.value = None
        self.configured = False
        self.mutable = True
        self.used = False
        self.lazy = False

    def effective_value(self):
        """The configured value if any, else the default."""
        return self.value if self.configured else self.default

    def resolved_value(self, evaluate=True):
        """``effective_value()`` with gin references and macros resolved."""
        value = self.effective_value()
        return _resolve(value, evaluate) if self.lazy and self.configured else value


class _Pending:
    """A value set (``config1``) for a name that has no registered target yet."""

    __slots__ = ("mutable", "name", "raise_if_used", "value")

    def __init__(self, name, value, mutable, raise_if_used):
        self.name = name
        self.value = value
        self.mutable = mutable
        self.raise_if_used = raise_if_used


class _Configurable:
    """Registry entry of one configurable function or class.

    Attributes:
        full_name (str): ``module.QualName`` (or the explicit name given to the decorator).
        target (Callable): what user code calls: the wrapper function, or the class.
        slots (dict[str, _Slot]): one per configurable argument.
    """

    def __init__(self, full_name, fn, skip_first, whitelist, blacklist):
        self.full_name = full_name
        self.target = None
        self.slots = {}
        self.params = []
        self._positions = {}
        if fn is not None:
            self._build(fn, skip_first, whitelist, blacklist)

    def _build(self, fn, skip_first, whitelist, blacklist):
        params = list(inspect.signature(fn).parameters.values())
        self.params = [p.name for p in params[int(skip_first) :]]
        for name in list(whitelist) + list(blacklist):
            if name not in self.params:
                raise ValueError(
                    f"'{name}' in the whitelist/blacklist of '{self.full_name}' is not one "
                    f"of its arguments {self.params}."
                )
        for index, param in enumerate(params):
            if param.kind is param.POSITIONAL_OR_KEYWORD:
                self._positions[param.name] = index
            if index < int(skip_first) or param.kind in (
                param.POSITIONAL_ONLY,
                param.VAR_POSITIONAL,
                param.VAR_KEYWORD,
            ):
                continue
            if (whitelist and param.name not in whitelist) or param.name in blacklist:
                continue
            self.slots[param.name] = _Slot(param.default)

    def reset(self):
        """Forget configured values and usage."""
        for slot in self.slots.values():
            slot.reset()

    def slot(self, arg):
        """The slot of argument ``arg``; a ``ValueError`` suggesting close names if none."""
        if arg in self.slots:
            return self.slots[arg]
        if arg in self.params:
            raise ValueError(
                f"Argument '{arg}' of '{self.full_name}' is not configurable "
                "(excluded by its whitelist/blacklist or positional-only)."
            )
        raise ValueError(
            f"'{self.full_name}' has no configurable argument '{arg}'."
            + _suggestion(arg, list(self.slots))
        )

    def inject(self, args, kwargs):
        """Add the configured values of the arguments the caller did not pass to ``kwargs``
        and mark every argument whose configured or default value is used."""
        num_args = len(args)
        for name, slot in self.slots.items():
            if name in kwargs or self._positions.get(name, num_args) < num_args:
                continue
            if slot.configured:
                kwargs[name] = slot.resolved_value()
                slot.used = True
            elif slot.has_default:
                slot.used = True


_REGISTRY = {}  # full name -> _Configurable; survives reset_configs()
_DEFINED = {}  # define_config name -> _Slot
_MACROS = {}  # gin macro name -> _Slot
_PENDING = []  # list[_Pending], in the order they were set
_TYPED_PREFIXES = set()  # configurable names as written by users, re-checked at validation
_LOADED_CONFS = set()  # real paths of conf files already executed
_CONF_FILES = []  # same, in loading order
_CONF_DIR_STACK = []  # directories of the conf files being executed


def reset_configs():
    """Clear every configured value, used flag, pending value, defined config, gin macro
    and the record of loaded conf files. Registered configurables stay registered."""
    for entry in _REGISTRY.values():
        entry.reset()
    _DEFINED.clear()
    _MACROS.clear()
    _PENDING.clear()
    _TYPED_PREFIXES.clear()
    _LOADED_CONFS.clear()
    _CONF_FILES.clear()


# --------------------------------------------------------------------------- name lookup


def _matches(full_name, suffix):
    return full_name == suffix or full_name.endswith("." + suffix)


def _suggestion(word, pool, extra=()):
    """``" Did you mean 'x' or 'y'?"`` for the names of ``pool`` close to ``word``, plus
    ``extra``; empty if there are none."""
    matches = difflib.get_close_matches(word, sorted(set(pool)), n=3, cutoff=0.6)
    matches += [m for m in extra if m not in matches]
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"


def _suffix_pool(num_parts):
    """Every registered full name cut to its last ``num_parts`` components."""
    return [".".join(name.split(".")[-num_parts:]) for name in _REGISTRY]


def _find_configurable(name):
    """The configurable whose full name is ``name`` or ends with ``'.' + name``.

    Returns:
        _Configurable | None: None if nothing matches.

    Raises:
        ValueError: if several configurables match.
    """
    entry = _REGISTRY.get(name)
    if entry is not None:
        return entry
    candidates = sorted(full for full in _REGISTRY if _matches(full, name))
    if len(candidates) > 1:
        raise ValueError(
            f"Configurable name '{name}' is ambiguous; it matches {candidates}. "
            "Use a longer suffix of the full name."
        )
    return _REGISTRY[candidates[0]] if candidates else None


def _unknown_configurable_error(name):
    pool = _suffix_pool(len(name.split(".")))
    return ValueError(
        f"Unknown configurable '{name}' (no registered configurable has this name or "
        "suffix; is its module imported?)." + _suggestion(name, pool)
    )


def _unknown_defined_error(name):
    same_arg = sorted(
        f"{entry.full_name.split('.')[-1]}.{name}"
        for entry in _REGISTRY.values()
        if name in entry.slots
    )
    return ValueError(
        f"Config '{name}' is neither defined with alf.define_config() nor a gin macro; "
        "arguments of configurables are set as 'Name.arg'."
        + _suggestion(name, list(_DEFINED) + list(_MACROS), same_arg[:3])
    )


def _check_name(config_name):
    if not isinstance(config_name, str) or not _NAME_RE.match(config_name):
        raise ValueError(
            f"Invalid config name {config_name!r}: expected 'Name.arg' (dot-separated "
            "identifiers) or the name of a defined config."
        )


def _lookup_slot(config_name):
    """The slot of ``'Name.arg'`` or of a defined config; ``ValueError`` if unknown."""
    _check_name(config_name)
    if "." not in config_name:
        slot = _DEFINED.get(config_name) or _MACROS.get(config_name)
        if slot is None:
            raise _unknown_defined_error(config_name)
        return slot
    prefix, arg = config_name.rsplit(".", 1)
    entry = _find_configurable(prefix)
    if entry is None:
        raise _unknown_configurable_error(prefix)
    return entry.slot(arg)


# --------------------------------------------------------------------------- setting values


def _assign(slot, name, value, mutable, raise_if_used):
    """Set ``slot`` to ``value`` following the mutable / raise_if_used rules."""
    if raise_if_used and slot.used:
        raise ValueError(
            f"Config '{name}' has already been used; set it before the code that uses it "
            "runs (or pass raise_if_used=False)."
        )
    if slot.configured and not slot.mutable:
        logging.warning(
            "Config '%s' is immutable with value %r; the new value %r is ignored.",
            name,
            slot.value,
            value,
        )
        return
    if slot.configured:
        logging.info("Config '%s' changes from %r to %r.", name, slot.value, value)
    slot.value = value
    slot.configured = True
    slot.mutable = mutable
    slot.lazy = _contains_lazy(value)


def config1(config_name, value, mutable=True, raise_if_used=True):
    """Set the value of one config.

    Args:
        config_name (str): ``'Name.arg'`` where ``Name`` is any unambiguous suffix of a
            configurable's full name, or the name of a config made by ``define_config``
            (or of a gin macro). If nothing matches yet, the value is kept pending and
            bound when its target registers (see ``validate_pending_configs``).
        value (Any): the value; it becomes the default of that argument.
        mutable (bool): if False, later ``config1`` calls on this config are ignored with a
            warning: the first immutable value wins (command-line values use this).
        raise_if_used (bool): raise ``ValueError`` if the config has already been used.

    Raises:
        ValueError: on an invalid or ambiguous name, an unknown argument of a known
            configurable, or a config that was already used.
    """
    _check_name(config_name)
    if "." not in config_name:
        slot = _DEFINED.get(config_name) or _MACROS.get(config_name)
        if slot is None:
            _PENDING.append(_Pending(config_name, value, mutable, raise_if_used))
        else:
            _assign(slot, config_name, value, mutable, raise_if_used)
        return
    prefix, arg = config_name.rsplit(".", 1)
    entry = _find_configurable(prefix)
    _TYPED_PREFIXES.add(prefix)
    if entry is None:
        _PENDING.append(_Pending(config_name, value, mutable, raise_if_used))
        return
    _assign(entry.slot(arg), f"{entry.full_name}.{arg}", value, mutable, raise_if_used)


def config(prefix_or_dict, mutable=True, raise_if_used=True, **kwargs):
    """Set several configs at once.

    Example::

        alf.config('TrainerConfig', unroll_length=32, num_iterations=100)
        alf.config({'TrainerConfig.unroll_length': 32, 'Adam.lr': 1e-3})

    Args:
        prefix_or_dict (str|dict): a configurable name (then ``kwargs`` maps its argument
            names to values), or a dict from config names to values.
        mutable (bool): see ``config1``.
        raise_if_used (bool): see ``config1``.
        **kwargs: argument values, only when ``prefix_or_dict`` is a str.
    """
    if isinstance(prefix_or_dict, str):
        items = [(f"{prefix_or_dict}.{arg}", value) for arg, value in kwargs.items()]
    elif isinstance(prefix_or_dict, dict):
        if kwargs:
            raise ValueError("alf.config() takes no keyword values when given a dict.")
        items = list(prefix_or_dict.items())
    else:
        raise ValueError(f"alf.config() expects a str or a dict, got {prefix_or_dict!r}.")
    for name, value in items:
        config1(name, value, mutable, raise_if_used)


def _apply_pending(matches_fn, slot_fn):
    """Bind the pending values accepted by ``matches_fn(name)`` to ``slot_fn(name)``."""
    remaining = []
    for pending in _PENDING:
        slot = slot_fn(pending.name) if matches_fn(pending.name) else None
        if slot is None:
            remaining.append(pending)
        else:
            _assign(slot, pending.name, pending.value, pending.mutable, pending.raise_if_used)
    _PENDING[:] = remaining


def _apply_pending_to(entry):
    def matches(name):
        return "." in name and _matches(entry.full_name, name.rsplit(".", 1)[0])

    _apply_pending(matches, lambda name: entry.slots.get(name.rsplit(".", 1)[1]))


def define_config(name, default_value):
    """Define a conf-level variable, e.g. ``alf.define_config('num_envs', 8)``.

    Its value can be changed with ``alf.config1(name, value)`` (also before it is defined,
    e.g. from ``--conf_param 'num_envs=16'``) and read with ``get_config_value(name)``.

    Args:
        name (str): a Python identifier (no dots: dotted names address configurables).
        default_value (Any): the value if nothing else sets it.

    Raises:
        ValueError: if ``name`` is not an identifier or is already defined.
    """
    if not isinstance(name, str) or not _IDENTIFIER_RE.match(name):
        raise ValueError(f"define_config name {name!r} must be a Python identifier.")
    if name in _DEFINED:
        raise ValueError(f"Config '{name}' is already defined.")
    _DEFINED[name] = _Slot(default_value)
    _apply_pending(lambda pending_name: pending_name == name, _DEFINED.get)


def get_config_value(config_name):
    """The value of a config (configured, else default) and mark it used.

    Args:
        config_name (str): ``'Name.arg'``, a name made by ``define_config`` or a gin macro.

    Returns:
        Any: the value; gin references and macros are resolved (``@Name()`` is called).

    Raises:
        ValueError: if the config is unknown or has neither a value nor a default.
    """
    slot = _lookup_slot(config_name)
    if not slot.configured and not slot.has_default:
        raise ValueError(f"Config '{config_name}' has neither a configured nor a default value.")
    slot.used = True
    return slot.resolved_value()


def validate_pending_configs():
    """Check that every configured name found its target, unambiguously.

    Call it once all modules that define configurables have been imported (e.g. after the
    conf file is loaded).

    Raises:
        ValueError: naming the first unresolved config and suggesting close valid names,
            or naming a configurable name that has become ambiguous, or an unknown gin
            ``@Name`` reference.
    """
    for pending in _PENDING:
        if "." not in pending.name:
            raise _unknown_defined_error(pending.name)
        prefix, arg = pending.name.rsplit(".", 1)
        entry = _find_configurable(prefix)
        if entry is None:
            raise _unknown_configurable_error(prefix)
        entry.slot(arg)
    for prefix in sorted(_TYPED_PREFIXES):
        _find_configurable(prefix)
    for slot in _configured_slots():
        if slot.lazy:
            _resolve(slot.value, evaluate=False)


def _configured_slots():
    slots = [s for e in _REGISTRY.values() for s in e.slots.values()]
    return [s for s in slots + list(_DEFINED.values()) if s.configured]


# --------------------------------------------------------------------------- decorator


def _full_name(obj, name):
    if name and "." in name:
        return name
    module = getattr(obj, "__module__", None)
    base = name or obj.__qualname__
    return f"{module}.{base}" if module else base


def _make_wrapper(fn, entry):
    @functools.wraps(fn)
    def _configured(*args, **kwargs):
        entry.inject(args, kwargs)
        return fn(*args, **kwargs)

    return _configured


def _construction_fn(cls):
    """``(attribute, function)`` that builds instances of ``cls``: the first Python-level
    ``__init__`` or ``__new__`` in its MRO, or ``(None, None)``."""
    for base in cls.__mro__:
        if base is object:
            break
        for attr in ("__init__", "__new__"):
            if attr in base.__dict__:
                fn = getattr(cls, attr)
                return (attr, fn) if inspect.isfunction(inspect.unwrap(fn)) else (None, None)
    return None, None


def _register(entry):
    if entry.full_name in _REGISTRY:
        logging.debug("Configurable '%s' is registered again.", entry.full_name)
    _REGISTRY[entry.full_name] = entry
    _apply_pending_to(entry)


def _decorate_class(cls, full_name, whitelist, blacklist):
    attr, fn = _construction_fn(cls)
    entry = _Configurable(full_name, fn, True, whitelist, blacklist)
    if fn is not None:
        wrapper = _make_wrapper(fn, entry)
        setattr(cls, attr, staticmethod(wrapper) if attr == "__new__" else wrapper)
    entry.target = cls
    _register(entry)
    return cls


def _decorate(obj, name, whitelist, blacklist):
    if whitelist and blacklist:
        raise ValueError("alf.configurable() takes a whitelist or a blacklist, not both.")
    if not callable(obj):
        raise ValueError(f"alf.configurable() can only decorate a callable, got {obj!r}.")
    full_name = _full_name(obj, name)
    if inspect.isclass(obj):
        return _decorate_class(obj, full_name, whitelist, blacklist)
    entry = _Configurable(full_name, obj, False, whitelist, blacklist)
    entry.target = _make_wrapper(obj, entry)
    _register(entry)
    return entry.target


def configurable(fn_or_name=None, whitelist=(), blacklist=()):
    """Make a function or class configurable with ``alf.config``.

    Usable as ``@alf.configurable``, ``@alf.configurable('Name')`` or
    ``@alf.configurable(whitelist=['lr'])``. For a class, the arguments of its constructor
    (``__init__``, or ``__new__`` for named tuples) are configured and the class itself is
    returned, so ``isinstance`` and subclassing work. A subclass is a separate configurable
    only if decorated itself; otherwise its ``super().__init__`` call uses the parent's
    configured values.

    Configured values are defaults: arguments passed explicitly by the caller win.

    Args:
        fn_or_name (Callable|str|None): the decorated object, or an explicit name. A name
            without dots is prefixed with the module name; a dotted name is used as is.
        whitelist (Iterable[str]): only these arguments are configurable.
        blacklist (Iterable[str]): these arguments are not configurable.

    Returns:
        The decorated function or class, or a decorator when given a name or lists.
    """
    whitelist, blacklist = tuple(whitelist), tuple(blacklist)
    if callable(fn_or_name):
        return _decorate(fn_or_name, None, whitelist, blacklist)
    if fn_or_name is not None and not isinstance(fn_or_name, str):
        raise ValueError(f"alf.configurable() expects a callable or a name, got {fn_or_name!r}.")
    return lambda obj: _decorate(obj, fn_or_name, whitelist, blacklist)


def get_all_config_names():
    """Sorted ``'full.Name.arg'`` of every configurable argument, plus defined configs."""
    names = [f"{full}.{arg}" for full, entry in _REGISTRY.items() for arg in entry.slots]
    return sorted(names + list(_DEFINED))


# --------------------------------------------------------------------------- gin values


class _ConfigurableRef:
    """A gin ``@Name`` (the configurable itself) or ``@Name()`` (the result of calling it,
    evaluated anew at every use)."""

    def __init__(self, name, evaluate):
        self.name = name
        self.evaluate = evaluate

    def resolve(self, evaluate=True):
        """The callable, or the result of calling it when ``self.evaluate and evaluate``;
        with ``evaluate=False`` an evaluating reference returns itself."""
        entry = _find_configurable(self.name)
        if entry is None:
            raise ValueError(
                f"Unknown configurable in gin reference '{self!r}'."
                + _suggestion(self.name, _suffix_pool(len(self.name.split("."))))
            )
        if not self.evaluate:
            return entry.target
        return entry.target() if evaluate else self

    def __repr__(self):
        return "@" + self.name + ("()" if self.evaluate else "")


class _MacroRef:
    """A gin ``%NAME`` macro, resolved to the macro's value when used."""

    def __init__(self, name):
        self.name = name

    def resolve(self, evaluate=True):
        """The value bound to the macro (itself resolved)."""
        slot = _MACROS.get(self.name)
        if slot is None:
            raise ValueError(f"Unknown gin macro '%{self.name}'." + _suggestion(self.name, _MACROS))
        return slot.resolved_value(evaluate)

    def __repr__(self):
        return "%" + self.name


_LAZY_TYPES = (_ConfigurableRef, _MacroRef)


def _contains_lazy(value):
    if isinstance(value, _LAZY_TYPES):
        return True
    if type(value) in (list, tuple):
        return any(_contains_lazy(v) for v in value)
    if type(value) is dict:
        return any(_contains_lazy(v) for v in value.values())
    return False


def _resolve(value, evaluate=True):
    """``value`` with gin references and macros replaced by what they stand for."""
    if isinstance(value, _LAZY_TYPES):
        return value.resolve(evaluate)
    if type(value) in (list, tuple):
        return type(value)(_resolve(v, evaluate) for v in value)
    if type(value) is dict:
        return {k: _resolve(v, evaluate) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- conf files


def _search_dirs():
    current = _CONF_DIR_STACK[-1] if _CONF_DIR_STACK else os.getcwd()
    extra = [d for d in os.environ.get(_CONFIG_PATH_ENV, "").split(os.pathsep) if d]
    return [current, _EXAMPLES_DIR, *extra]


def _locate_conf(conf_file):
    conf_file = os.path.expanduser(os.fspath(conf_file))
    if os.path.isabs(conf_file):
        if os.path.isfile(conf_file):
            return os.path.realpath(conf_file)
        raise ValueError(f"Conf file '{conf_file}' does not exist.")
    dirs = _search_dirs()
    for directory in dirs:
        path = os.path.join(directory, conf_file)
        if os.path.isfile(path):
            return os.path.realpath(path)
    raise ValueError(f"Cannot find conf file '{conf_file}' (searched {dirs}).")


def _exec_python_conf(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    module_name = _CONF_MODULE_PREFIX + re.sub(r"\W", "_", stem)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)


def _run_conf(path):
    if not path.endswith((".py", ".gin")):
        raise ValueError(f"Conf file '{path}' must end with '.py' or '.gin'.")
    _LOADED_CONFS.add(path)
    _CONF_FILES.append(path)
    _CONF_DIR_STACK.append(os.path.dirname(path))
    try:
        if path.endswith(".gin"):
            with open(path, encoding="utf-8") as source:
                _parse_gin(source, path, mutable=True)
        else:
            _exec_python_conf(path)
    finally:
        _CONF_DIR_STACK.pop()


def load_config(conf_file):
    """Execute a conf file: a ``.py`` file (run as a module) or a ``.gin`` file.

    A relative path is looked up in the current directory (or the directory of the conf
    file being executed), then in ``alf/examples/``, then in the directories listed in the
    ``ALF_CONFIG_PATH`` environment variable (``os.pathsep``-separated).

    Args:
        conf_file (str): path of the conf file.
    """
    _run_conf(_locate_conf(conf_file))


def import_config(conf_file):
    """Execute another conf file from a conf file, at most once.

    Same search as ``load_config`` but relative paths start from the directory of the conf
    file that calls it. A file that was already loaded (since the last ``reset_configs``)
    is skipped.

    Args:
        conf_file (str): path of the ``.py`` or ``.gin`` conf file.
    """
    path = _locate_conf(conf_file)
    if path in _LOADED_CONFS:
        logging.debug("Conf file '%s' is already loaded; skipped.", path)
        return
    _run_conf(path)


def get_loaded_conf_files():
    """Real paths of the conf files executed since the last reset, in loading order."""
    return list(_CONF_FILES)


class _GinDelegate:
    """Builds the values of gin references and macros for gin's ``ConfigParser``."""

    def configurable_reference(self, scoped_name, evaluate):
        _check_no_gin_scope(scoped_name)
        return _ConfigurableRef(scoped_name, evaluate)

    def macro(self, scoped_name):
        _check_no_gin_scope(scoped_name)
        return _MacroRef(scoped_name)


def _check_no_gin_scope(name):
    if "/" in name:
        raise ValueError(f"gin scopes are not supported by alf ('{name}').")


def _gin_import(statement):
    try:
        importlib.import_module(statement.module)
    except ImportError as error:
        parent = statement.module.rsplit(".", 1)[0]
        if not statement.is_from or parent == statement.module:
            raise ValueError(f"Cannot import '{statement.module}': {error}") from None
        _gin_import(statement._replace(module=parent, is_from=False))


def _gin_binding(statement, mutable):
    if statement.scope:
        _check_no_gin_scope(statement.scope + "/" + statement.selector)
    if statement.arg_name:
        config1(f"{statement.selector}.{statement.arg_name}", statement.value, mutable)
    else:
        _set_macro(statement.selector, statement.value, mutable)


def _set_macro(name, value, mutable):
    """Bind gin macro ``name``; a value set earlier with ``config1(name, ...)`` (e.g. an
    immutable ``--conf_param``) is applied first."""
    slot = _MACROS.get(name)
    if slot is None:
        slot = _MACROS[name] = _Slot()
        _apply_pending(lambda pending_name: pending_name == name, _MACROS.get)
    _assign(slot, "%" + name, value, mutable, True)


def _apply_gin_statement(statement, config_parser, mutable):
    if isinstance(statement, config_parser.BindingStatement):
        _gin_binding(statement, mutable)
    elif isinstance(statement, config_parser.ImportStatement):
        _gin_import(statement)
    elif isinstance(statement, config_parser.IncludeStatement):
        import_config(statement.filename)
    # A BlockDeclaration is followed by the BindingStatements of its block.


def _parse_gin(source, origin, mutable):
    """Read gin statements from a file object or string into this registry."""
    from gin import config_parser  # imported here: gin is only needed for gin confs

    parser = config_parser.ConfigParser(source, _GinDelegate())
    while True:
        try:
            statement = parser.parse_statement()
        except (SyntaxError, ValueError) as error:
            raise ValueError(f"Cannot parse gin config {origin}: {error}") from None
        if statement is None:
            return
        try:
            _apply_gin_statement(statement, config_parser, mutable)
        except ValueError as error:
            line = statement.location.line_num
            raise ValueError(f"{origin}, line {line}: {error}") from None


# --------------------------------------------------------------------------- command line


def parse_conf_param(conf_param):
    """Parse one ``--conf_param`` string ``'Name.arg=value'``.

    Args:
        conf_param (str): the string; ``value`` must be a Python literal (strings quoted),
            and the name may also be a name defined with ``define_config``.

    Returns:
        tuple[str, Any]: the config name and the value.

    Raises:
        ValueError: naming ``conf_param`` if the ``=``, the name or the value is malformed.
    """
    name, sep, value_str = conf_param.partition("=")
    name = name.strip()
    if not sep:
        raise ValueError(f"conf_param {conf_param!r} has no '='; expected 'Name.arg=value'.")
    if not _NAME_RE.match(name):
        raise ValueError(
            f"conf_param {conf_param!r} has an invalid name {name!r}; expected 'Name.arg' "
            "(dot-separated identifiers) or a name defined with alf.define_config."
        )
    try:
        value = ast.literal_eval(value_str.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(
            f"conf_param {conf_param!r} has a value that is not a Python literal: "
            f"{value_str.strip()!r} (quote strings, e.g. Name.arg='\"text\"')."
        ) from None
    return name, value


def apply_conf_params(conf_params):
    """Apply ``--conf_param`` strings as immutable configs, so conf files cannot override
    them. They may name configurables that are not imported yet (they stay pending).

    Args:
        conf_params (Iterable[str]): strings ``'Name.arg=value'``.

    Returns:
        list[tuple[str, Any]]: the parsed (name, value) pairs.
    """
    parsed = [parse_conf_param(conf_param) for conf_param in conf_params]
    for name, value in parsed:
        config1(name, value, mutable=False)
    return parsed


def apply_gin_params(gin_params):
    """Apply ``--gin_param`` strings (gin binding syntax, e.g. ``'Name.arg = @Other'``) as
    immutable configs.

    Args:
        gin_params (Iterable[str]): gin statements, one per string.
    """
    gin_params = list(gin_params)
    if gin_params:
        _parse_gin("\n".join(gin_params) + "\n", "--gin_param", mutable=False)


# --------------------------------------------------------------------------- reports


def get_operative_configs(include_defaults=False):
    """The configured values that have been used, per configurable.

    A value is operative when a call did not pass that argument explicitly, so the
    configured value was used. Pending configs are validated first.

    Args:
        include_defaults (bool): also report the default values that were used.

    Returns:
        list[tuple[str, dict[str, Any]]]: ``(full_name, {arg: value})`` sorted by name;
        used ``define_config`` values come last under ``DEFINED_CONFIGS_KEY``. gin macros
        and ``@Name`` are resolved; an ``@Name()`` is reported as the reference.
    """
    validate_pending_configs()
    result = []
    for name in sorted(_REGISTRY):
        args = {
            arg: slot.resolved_value(evaluate=False)
            for arg, slot in _REGISTRY[name].slots.items()
            if slot.used and (slot.configured or include_defaults)
        }
        if args:
            result.append((name, args))
    defined = {n: s.resolved_value(False) for n, s in sorted(_DEFINED.items()) if s.used}
    if defined:
        result.append((DEFINED_CONFIGS_KEY, defined))
    return result


def get_inoperative_configs():
    """The configured values that have never been used, including pending ones.

    Returns:
        list[tuple[str, dict[str, Any]]]: ``(name, {arg: value})`` sorted by name, with
        the configured (unresolved) values; pending values are listed under the name as
        written, unused defined configs under ``DEFINED_CONFIGS_KEY``.
    """
    groups = {}
    for name, entry in _REGISTRY.items():
        for arg, slot in entry.slots.items():
            if slot.configured and not slot.used:
                groups.setdefault(name, {})[arg] = slot.value
    for name, slot in _DEFINED.items():
        if slot.configured and not slot.used:
            groups.setdefault(DEFINED_CONFIGS_KEY, {})[name] = slot.value
    for pending in _PENDING:
        prefix, _, arg = pending.name.rpartition(".")
        groups.setdefault(prefix or DEFINED_CONFIGS_KEY, {})[arg] = pending.value
    return sorted(groups.items(), key=lambda item: item[0])


class _NotRenderable(Exception):
    """Raised for a value that has no Python source form; carries its repr."""


class _Renderer:
    """Renders values as Python source, collecting the modules the source needs."""

    def __init__(self):
        self.imports = set()

    def render(self, value):
        """Python source text that evaluates to ``value``; ``_NotRenderable`` if none."""
        if isinstance(value, _ConfigurableRef):
            text = self.render(_ref_target(value))
            return text + "()" if value.evaluate else text
        if isinstance(value, _MacroRef):
            return self.render(value.resolve(evaluate=False))
        if type(value) in (bool, int, str, bytes) or value is None:
            return repr(value)
        if type(value) is float:
            return repr(value) if math.isfinite(value) else f"float('{value}')"
        if isinstance(value, enum.Enum):
            return f"{self.render_global(type(value))}.{value.name}"
        if isinstance(value, (list, tuple, set, frozenset, dict)):
            return self._render_container(value)
        if getattr(value, "_alf_repr_call", None) is not None:
            cls, args, kwargs = value._alf_repr_call
            return self._render_call(cls, args, kwargs)
        if isinstance(value, functools.partial):
            return self._render_call(value.func, value.args, value.keywords)
        if inspect.isclass(value) or inspect.isroutine(value):
            return self.render_global(value)
        if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
            return self.render(value.item())  # a numpy scalar, as the Python number
        return _render_literal(value)

    def render_global(self, obj):
        """``module.QualName`` of a module-level object, adding ``module`` to the imports."""
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if not _is_importable(obj, module, qualname):
            raise _NotRenderable(repr(obj))
        if module == "builtins":
            return qualname
        self.imports.add(module)
        return f"{module}.{qualname}"

    def _render_call(self, fn, args, kwargs):
        parts = [self.render(a) for a in args]
        parts += [f"{k}={self.render(v)}" for k, v in kwargs.items()]
        callee = "functools.partial" if fn is functools.partial else self.render_global(fn)
        return f"{callee}({', '.join(parts)})"

    def _render_container(self, value):
        kind = type(value)
        if isinstance(value, tuple) and hasattr(kind, "_fields"):
            return self._render_call(kind, (), dict(zip(kind._fields, value)))
        if kind is dict:
            items = ", ".join(f"{self.render(k)}: {self.render(v)}" for k, v in value.items())
            return "{" + items + "}"
        items = [self.render(v) for v in value]
        if kind is list:
            return "[" + ", ".join(items) + "]"
        if kind is tuple:
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if kind in (set, frozenset) and items:
            text = "{" + ", ".join(sorted(items)) + "}"
            return text if kind is set else f"frozenset({text})"
        if kind in (set, frozenset):
            return f"{kind.__name__}()"
        return _render_literal(value)


def _ref_target(ref):
    entry = _find_configurable(ref.name)
    if entry is None:
        raise _NotRenderable(repr(ref))
    return entry.target


def _is_importable(obj, module, qualname):
    bad_module = not module or module == "__main__" or module.startswith(_CONF_MODULE_PREFIX)
    if bad_module or not qualname or "<" in qualname or module not in sys.modules:
        return False
    target = sys.modules[module]
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target is obj


def _render_literal(value):
    text = repr(value)
    try:
        if ast.literal_eval(text) == value:
            return text
    except Exception:  # any failure means the repr does not round-trip
        pass
    raise _NotRenderable(text)


def _format_call(renderer, callee, leading, kwargs):
    """Lines of ``callee(leading..., k=v...)``; unrenderable values become comments."""
    comments, parts = [], list(leading)
    for arg, value in kwargs.items():
        try:
            parts.append(f"{arg}={renderer.render(value)}")
        except _NotRenderable as error:
            text = str(error).replace("\n", " ")
            comments.append(f"# {arg}={text}  (not renderable as Python source)")
    if len(parts) == len(leading):
        return comments
    line = f"{callee}({', '.join(parts)})"
    if len(line) <= 100:
        return comments + [line]
    return comments + [f"{callee}("] + [f"    {p}," for p in parts] + [")"]


def _format_defined(renderer, values):
    lines = []
    for name, value in values.items():
        try:
            lines.append(f"alf.define_config({name!r}, {renderer.render(value)})")
        except _NotRenderable as error:
            lines.append(f"# define_config {name}={error}  (not renderable as Python source)")
    return lines


def operative_config_str():
    """The operative configuration as a runnable Python conf file.

    It holds ``import`` lines, ``alf.define_config`` for the used defined configs and one
    ``alf.config('full.Name', arg=value, ...)`` per configurable whose configured values
    were used, followed by the default values that were used, as comments. Values without
    a Python source form are written as comments.

    Returns:
        str: the conf text.
    """
    renderer = _Renderer()
    configs = get_operative_configs()
    defined = dict(configs).pop(DEFINED_CONFIGS_KEY, {})
    body = [""] + _format_defined(renderer, defined) if defined else []
    for name, args in _dependency_order([c for c in configs if c[0] != DEFINED_CONFIGS_KEY]):
        body += [""] + _format_call(renderer, "alf.config", [repr(name)], args)
    header = ["# Operative configuration written by alf.config_util.operative_config_str().", ""]
    imports = ["import alf"] + [f"import {m}" for m in sorted(renderer.imports)]
    return "\n".join(header + imports + body + _format_defaults()) + "\n"


def _called_configurables(value):
    """Full names of the configurables that the ``@Name()`` references in ``value`` call."""
    if isinstance(value, _ConfigurableRef):
        entry = _find_configurable(value.name) if value.evaluate else None
        return {entry.full_name} if entry else set()
    if type(value) in (list, tuple):
        return set().union(*map(_called_configurables, value))
    if type(value) is dict:
        return set().union(*map(_called_configurables, value.values()))
    return set()


def _dependency_order(configs):
    """``configs`` reordered so that a configurable called by an ``@Name()`` value is
    configured before the ``alf.config`` line that calls it (in a Python conf the call
    happens when the line runs)."""
    by_name = dict(configs)
    ordered, seen = [], set()

    def visit(name):
        if name in seen or name not in by_name:
            return
        seen.add(name)
        for dependency in sorted(_called_configurables(list(by_name[name].values()))):
            visit(dependency)
        ordered.append(name)

    for name, _ in configs:
        visit(name)
    return [(name, by_name[name]) for name in ordered]


def _format_defaults():
    """Commented ``alf.config`` lines for the default values used, for reference."""
    operative = dict(get_operative_configs())
    lines = []
    for name, args in get_operative_configs(include_defaults=True):
        defaults = {k: v for k, v in args.items() if k not in operative.get(name, {})}
        if name != DEFINED_CONFIGS_KEY and defaults:
            call = _format_call(_Renderer(), "alf.config", [repr(name)], defaults)
            lines += [line if line.startswith("#") else "# " + line for line in call]
    if lines:
        lines = ["", "# Default values used (for reference, not configured):"] + lines
    return lines


# --------------------------------------------------------------------------- repr_wrapper


def repr_wrapper(cls):
    """Class decorator: instances ``repr`` as their constructor call, e.g.
    ``Normal(loc=0.0, scale=1.0)``, and ``operative_config_str`` renders them as such.

    Args:
        cls (type): the class.

    Returns:
        type: the same class, with ``__init__`` recording its arguments and a ``__repr__``.
    """
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        if getattr(self, "_alf_repr_call", None) is None:
            with contextlib.suppress(AttributeError):  # no instance __dict__ (__slots__)
                object.__setattr__(self, "_alf_repr_call", (cls, args, kwargs))
        init(self, *args, **kwargs)

    def __repr__(self):
        call = getattr(self, "_alf_repr_call", None)
        if call is None:
            return object.__repr__(self)
        klass, args, kwargs = call
        parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
        return f"{klass.__qualname__}({', '.join(parts)})"

    cls.__init__ = __init__
    cls.__repr__ = __repr__
    return cls
