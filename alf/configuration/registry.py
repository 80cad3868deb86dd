"""The state of alf's configuration registry and its name lookup.

Internal module: use ``alf.config_util``. Every other ``alf.configuration`` module reads and
writes the containers defined here:

- ``REGISTRY``: the registered configurables (``Configurable``), one ``Slot`` per
  configurable argument; it survives ``reset_configs()``.
- ``DEFINED`` and ``MACROS``: the ``Slot`` of each ``define_config`` name and gin macro.
  They share one namespace (see ``named_slot``): a gin binding ``NAME = value`` sets a
  defined config of that name, and ``%NAME`` reads it.
- ``PENDING``: values set for names that have no target yet (``Pending``).

It also resolves configurable names by dot-boundary suffix (importing the module of one
of alf's own configurables on demand, see ``catalog``), builds the "did you mean" error
messages, and defines the lazy gin values ``@Name`` / ``@Name()`` (``ConfigurableRef``)
and ``%NAME`` (``MacroRef``), resolved when used.
"""

import difflib
import importlib
import inspect
import re
import sys

from alf.configuration import catalog, scopes

NAME_RE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
"""A config name: dot-separated identifiers (match it with ``fullmatch``)."""

IDENTIFIER_RE = re.compile(r"[A-Za-z_]\w*")
"""A ``define_config`` name (match it with ``fullmatch``)."""


# --------------------------------------------------------------------------- state


class Slot:
    """The configured state of one value: a configurable argument, a defined config or a
    gin macro."""

    __slots__ = (
        "configured",
        "default",
        "has_default",
        "lazy",
        "mutable",
        "overridden",
        "used",
        "value",
    )

    def __init__(self, default=inspect.Parameter.empty):
        self.set_default(default)
        self.reset()

    def set_default(self, default):
        """Set the value used when nothing is configured (``Parameter.empty``: none)."""
        self.has_default = default is not inspect.Parameter.empty
        self.default = default if self.has_default else None

    def reset(self):
        """Forget the configured value and the used flag (the default stays)."""
        self.value = None
        self.configured = False
        self.mutable = True
        self.used = False
        self.overridden = False  # configured, but a call passed the argument explicitly
        self.lazy = False

    def effective_value(self):
        """The configured value if any, else the default."""
        return self.value if self.configured else self.default

    def resolved_value(self, evaluate=True):
        """``effective_value()`` with gin references and macros resolved."""
        value = self.effective_value()
        return resolve(value, evaluate) if self.lazy and self.configured else value


class Pending:
    """A value set (``config1``) for a name that has no registered target yet."""

    __slots__ = ("mutable", "name", "raise_if_used", "value")

    def __init__(self, name, value, mutable, raise_if_used):
        self.name = name
        self.value = value
        self.mutable = mutable
        self.raise_if_used = raise_if_used


class Configurable:
    """Registry entry of one configurable function or class.

    Attributes:
        full_name (str): ``module.QualName`` (or the explicit name given to the decorator).
        target (Callable): what user code calls: the wrapper function, or the class.
        slots (dict[str, Slot]): one per configurable argument.
        params (list[str]): every argument name of the wrapped function (after ``self``).
        fn (Callable | None): the wrapped function, whose signature says what each argument
            accepts (``typecheck``).
    """

    def __init__(self, full_name, fn, skip_first, whitelist, blacklist):
        self.full_name = full_name
        self.target = None
        self.fn = fn
        self.slots = {}
        self.params = []
        self._positions = {}
        self.alf_bases = ()  # ((full name of an ALF base class, frozenset(args)), ...)
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
            self.slots[param.name] = Slot(param.default)

    def reset(self):
        """Forget configured values and usage."""
        for slot in self.slots.values():
            slot.reset()

    def configured_as_pending(self):
        """The configured values, as ``Pending`` values addressed by full name."""
        return [
            Pending(f"{self.full_name}.{arg}", slot.value, slot.mutable, False)
            for arg, slot in self.slots.items()
            if slot.configured
        ]

    def slot(self, arg):
        """The slot of argument ``arg``; a ``ValueError`` suggesting close names if none.

        ALF's ``*_network_cls`` argument names (``ARG_ALIASES``) address the ``*_ctor``
        argument of a configurable that has no argument of the ALF name.
        """
        if arg in self.slots:
            return self.slots[arg]
        alias = ARG_ALIASES.get(arg)
        if alias in self.slots and arg not in self.params:
            return self.slots[alias]
        if arg in self.params:
            raise ValueError(
                f"Argument '{arg}' of '{self.full_name}' is not configurable "
                "(excluded by its whitelist/blacklist or positional-only)."
            )
        raise ValueError(
            f"'{self.full_name}' has no configurable argument '{arg}'."
            + suggestion(arg, list(self.slots))
        )

    def inject(self, args, kwargs):
        """Add the configured values of the arguments the caller did not pass to ``kwargs``
        and mark every argument whose configured or default value is used.

        An argument not configured for this class takes the value configured for the
        nearest configurable base class that has the same argument (as in ALF); an
        argument the caller passed marks a configured value as ``overridden``. A value
        bound in an active gin scope (``scopes``) comes before all of these.
        """
        num_args = len(args)
        for name, slot in self.slots.items():
            if name in kwargs or self._positions.get(name, num_args) < num_args:
                slot.overridden = slot.overridden or slot.configured
                continue
            scoped = scopes.scoped_slot_for(self.full_name, name)
            if scoped is not None:  # a gin scope active now binds it (scopes.py)
                kwargs[name] = scoped.resolved_value()
                scoped.used = True
                continue
            source = slot if slot.configured else self.inherited(name)
            if source is not None:
                kwargs[name] = source.resolved_value()
                source.used = slot.used = True
            elif slot.has_default:
                slot.used = True

    def inherited(self, name):
        """The configured slot ``name`` of the nearest configurable base class, or None.

        The ALF base classes a class declares (``configurable(alf_bases=...)``) come
        right after it, for the arguments it declares them for: ALF's class is a
        subclass of them there, and its ``super().__init__`` leaves those arguments to
        them."""
        for entry in self._ancestors(name):
            slot = entry.slots.get(name)
            if slot is not None and slot.configured:
                return slot
        return None

    def _ancestors(self, name):
        """The registry entries ``name`` may be inherited from, nearest first."""
        classes = getattr(self.target, "__mro__", None) or (None,)
        for index, klass in enumerate(classes):
            entry = self if index == 0 else CLASS_ENTRIES.get(klass)
            if entry is None:
                continue
            if index > 0:
                yield entry
            for base_name, args in entry.alf_bases:
                base = REGISTRY.get(base_name)
                if name in args and base is not None:
                    yield base


ARG_ALIASES = {
    "actor_network_cls": "actor_network_ctor",
    "critic_network_cls": "critic_network_ctor",
    "q_network_cls": "q_network_ctor",
    "value_network_cls": "value_network_ctor",
}
"""ALF's argument name -> alf's name of the same argument (see ``Configurable.slot``)."""

REGISTRY = {}  # full name -> Configurable; survives reset_registry()
CLASS_ENTRIES = {}  # configurable class -> its Configurable (for inherited values)
DEFINED = {}  # define_config name -> Slot
MACROS = {}  # gin macro name -> Slot (a name is in DEFINED or MACROS, never both)
PENDING = []  # list[Pending], in the order they were set
TYPED_PREFIXES = set()  # configurable names as written by users, re-checked at validation


def reset_registry():
    """Clear every configured value, used flag, pending value, defined config and gin
    macro. Registered configurables stay registered."""
    for entry in REGISTRY.values():
        entry.reset()
    DEFINED.clear()
    MACROS.clear()
    PENDING.clear()
    TYPED_PREFIXES.clear()
    scopes.reset_scopes()


def named_slot(name):
    """The slot of the defined config or gin macro ``name``, or None."""
    return DEFINED.get(name) or MACROS.get(name)


# --------------------------------------------------------------------------- name lookup


def matches(full_name, suffix):
    """Whether ``suffix`` is ``full_name`` or a dot-boundary suffix of it."""
    return full_name == suffix or full_name.endswith("." + suffix)


def suggestion(word, pool, extra=()):
    """``" Did you mean 'x' or 'y'?"`` for the names of ``pool`` close to ``word``, plus
    ``extra``; empty if there are none."""
    close = difflib.get_close_matches(word, sorted(set(pool)), n=3, cutoff=0.6)
    close += [m for m in extra if m not in close]
    if not close:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in close) + "?"


def suffix_pool(num_parts):
    """Every registered full name, and the full name of every configurable of alf
    (``catalog``), cut to its last ``num_parts`` components."""
    names = set(REGISTRY) | {full for _, full in catalog.full_names()}
    return [".".join(name.split(".")[-num_parts:]) for name in names]


def find_configurable(name):
    """The configurable whose full name is ``name`` or ends with ``'.' + name``.

    If no registered configurable matches, the modules of alf that define a configurable
    of that name (``catalog``) are imported first, so that alf's own configurables are
    found without an import in the conf file.

    Returns:
        Configurable | None: None if nothing matches.

    Raises:
        ValueError: if several configurables match.
    """
    entry = _find_registered(name)
    if entry is None and _import_alf_modules_defining(name):
        entry = _find_registered(name)
    return entry


def _find_registered(name):
    entry = REGISTRY.get(name)
    if entry is not None:
        return entry
    candidates = sorted(full for full in REGISTRY if matches(full, name))
    if len(candidates) > 1:
        raise ValueError(
            f"Configurable name '{name}' is ambiguous; it matches {candidates}. "
            "Use a longer suffix of the full name."
        )
    return REGISTRY[candidates[0]] if candidates else None


def _import_alf_modules_defining(name):
    """Import the modules not imported yet that define an alf configurable matching
    ``name`` (which registers it); whether there were any."""
    defining = {module for module, full in catalog.full_names() if matches(full, name)}
    modules = sorted(module for module in defining if module not in sys.modules)
    for module in modules:
        importlib.import_module(module)
    return bool(modules)


def unknown_configurable_error(name):
    """The ``ValueError`` for a configurable name that matches nothing."""
    pool = suffix_pool(len(name.split(".")))
    return ValueError(
        f"Unknown configurable '{name}' (no registered configurable has this name or "
        "suffix; is its module imported?)." + suggestion(name, pool)
    )


def unknown_defined_error(name):
    """The ``ValueError`` for a dot-less name that is neither defined nor a gin macro."""
    same_arg = sorted(
        f"{entry.full_name.split('.')[-1]}.{name}"
        for entry in REGISTRY.values()
        if name in entry.slots
    )
    return ValueError(
        f"Config '{name}' is neither defined with alf.define_config() nor a gin macro; "
        "arguments of configurables are set as 'Name.arg'."
        + suggestion(name, list(DEFINED) + list(MACROS), same_arg[:3])
    )


def check_name(config_name):
    """Raise ``ValueError`` unless ``config_name`` is dot-separated identifiers."""
    if not isinstance(config_name, str) or not NAME_RE.fullmatch(config_name):
        raise ValueError(
            f"Invalid config name {config_name!r}: expected 'Name.arg' (dot-separated "
            "identifiers) or the name of a defined config."
        )


def lookup_slot(config_name):
    """The slot of ``'Name.arg'`` or of a defined config; ``ValueError`` if unknown."""
    check_name(config_name)
    if "." not in config_name:
        slot = named_slot(config_name)
        if slot is None:
            raise unknown_defined_error(config_name)
        return slot
    prefix, arg = config_name.rsplit(".", 1)
    entry = find_configurable(prefix)
    if entry is None:
        raise unknown_configurable_error(prefix)
    return entry.slot(arg)


# --------------------------------------------------------------------------- gin values


def _import_attribute(dotted_name):
    """``module.attr`` for a dotted name that is not a configurable (e.g. ``torch.tanh``),
    or None when no module prefix of it imports and has the attribute."""
    parts = dotted_name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            value = getattr(value, attr, None)
            if value is None:
                return None
        return value
    return None


class ConfigurableRef:
    """A gin ``@Name`` (the configurable itself) or ``@Name()`` (the result of calling it,
    evaluated anew at every use); with a gin scope (``@scope/Name``) every call of it runs
    in that scope (``scopes.in_scope``)."""

    def __init__(self, name, evaluate, scope=None):
        self.name = name
        self.evaluate = evaluate
        self.scope = scope

    def resolve(self, evaluate=True):
        """The callable, or the result of calling it when ``self.evaluate and evaluate``;
        with ``evaluate=False`` an evaluating reference returns itself."""
        entry = find_configurable(self.name)
        target = entry.target if entry is not None else _import_attribute(self.name)
        if target is None:
            raise ValueError(
                f"Unknown configurable in gin reference '{self!r}'."
                + suggestion(self.name, suffix_pool(len(self.name.split("."))))
            )
        if self.scope:
            target = scopes.in_scope(self.scope, target)
        if not self.evaluate:
            return target
        return target() if evaluate else self

    def __repr__(self):
        scope = self.scope + "/" if self.scope else ""
        return "@" + scope + self.name + ("()" if self.evaluate else "")


class MacroRef:
    """A gin ``%NAME`` macro (or defined config), resolved to its value when used."""

    def __init__(self, name):
        self.name = name

    def resolve(self, evaluate=True):
        """The value bound to the macro (itself resolved)."""
        slot = named_slot(self.name)
        if slot is None:
            raise ValueError(
                f"Unknown gin macro '%{self.name}'."
                + suggestion(self.name, list(MACROS) + list(DEFINED))
            )
        return slot.resolved_value(evaluate)

    def __repr__(self):
        return "%" + self.name


LAZY_TYPES = (ConfigurableRef, MacroRef)


def contains_lazy(value):
    """Whether ``value`` holds a gin reference or macro (in lists, tuples, dicts)."""
    if isinstance(value, LAZY_TYPES):
        return True
    if type(value) in (list, tuple):
        return any(contains_lazy(v) for v in value)
    if type(value) is dict:
        return any(contains_lazy(v) for v in value.values())
    return False


def resolve(value, evaluate=True):
    """``value`` with gin references and macros replaced by what they stand for."""
    if isinstance(value, LAZY_TYPES):
        return value.resolve(evaluate)
    if type(value) in (list, tuple):
        return type(value)(resolve(v, evaluate) for v in value)
    if type(value) is dict:
        return {k: resolve(v, evaluate) for k, v in value.items()}
    return value
