"""Reports on the configuration: which configured values were used (operative) or not
(inoperative), and the operative configuration written as a runnable Python conf file.

Internal module: use ``alf.config_util``. ``repr_wrapper`` lives here because it records
the constructor call that ``operative_config_str`` writes for an instance.
"""

import ast
import contextlib
import enum
import functools
import inspect
import math
import sys

from alf.configuration import scopes
from alf.configuration.binding import validate_pending_configs
from alf.configuration.loader import CONF_MODULE_PREFIX
from alf.configuration.registry import (
    DEFINED,
    PENDING,
    REGISTRY,
    ConfigurableRef,
    find_configurable,
)

DEFINED_CONFIGS_KEY = "<define_config>"
"""Name under which ``get_(in)operative_configs`` report the ``define_config`` values."""

_MAX_LINE_LENGTH = 100


# --------------------------------------------------------------------------- reports


def get_operative_configs(include_defaults=False):
    """The configured values that have been used, per configurable.

    A value is operative when a call did not pass that argument explicitly, so the
    configured value was used. Pending configs are validated first.

    Args:
        include_defaults (bool): also report the default values that were used (not an
            argument whose value a base class's configured one gave: that one is reported).

    Returns:
        list[tuple[str, dict[str, Any]]]: ``(full_name, {arg: value})`` sorted by name;
        used ``define_config`` values come last under ``DEFINED_CONFIGS_KEY``. gin macros
        and ``@Name`` are resolved; an ``@Name()`` is reported as the reference.
    """
    validate_pending_configs()
    result = []
    for name in sorted(REGISTRY):
        entry = REGISTRY[name]
        args = {
            arg: slot.resolved_value(evaluate=False)
            for arg, slot in entry.slots.items()
            if slot.used
            and (slot.configured or (include_defaults and entry.inherited(arg) is None))
        }
        if args:
            result.append((name, args))
    defined = {n: s.resolved_value(False) for n, s in sorted(DEFINED.items()) if s.used}
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
    for name, entry in REGISTRY.items():
        for arg, slot in entry.slots.items():
            if slot.configured and not slot.used:
                groups.setdefault(name, {})[arg] = slot.value
    for name, slot in DEFINED.items():
        if slot.configured and not slot.used:
            groups.setdefault(DEFINED_CONFIGS_KEY, {})[name] = slot.value
    for pending in PENDING:
        prefix, _, arg = pending.name.rpartition(".")
        groups.setdefault(prefix or DEFINED_CONFIGS_KEY, {})[arg] = pending.value
    return sorted(groups.items(), key=lambda item: item[0])


# --------------------------------------------------------------------------- rendering


class _NotRenderable(Exception):
    """Raised for a value that has no Python source form; carries its repr."""


class _Renderer:
    """Renders values as Python source, collecting the modules the source needs."""

    def __init__(self):
        self.imports = set()

    def render(self, value):
        """Python source text that evaluates to ``value``; ``_NotRenderable`` if none.

        ``value`` is a value reported by ``get_operative_configs``: macros and ``@Name``
        are already resolved, an ``@Name()`` is rendered as the call ``module.Name()``.
        """
        if isinstance(value, ConfigurableRef) and value.scope:
            raise _NotRenderable(repr(value))  # its scoped values: see _format_scoped
        if isinstance(value, ConfigurableRef):
            text = self.render_global(_ref_target(value))
            return text + "()" if value.evaluate else text
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
            args = (value.func, *value.args)
            return self._render_call(functools.partial, args, value.keywords)
        if inspect.isclass(value) or inspect.isroutine(value):
            return self.render_global(value)
        if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
            return self.render(value.item())  # a numpy scalar, as the Python number
        return _render_literal(value)

    def render_global(self, obj):
        """``module.QualName`` of a module-level object, adding ``module`` to the imports.

        Falls back to ``module.__name__`` when that is the object: torch's functions
        (``torch.relu_``: qualname ``_VariableFunctionsClass.relu_``) are exported so.
        """
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if not _is_importable(obj, module, qualname):
            qualname = getattr(obj, "__name__", None)
            if not _is_importable(obj, module, qualname):
                raise _NotRenderable(repr(obj))
        if module == "builtins":
            return qualname
        self.imports.add(module)
        return f"{module}.{qualname}"

    def _render_call(self, fn, args, kwargs):
        parts = [self.render(a) for a in args]
        parts += [f"{k}={self.render(v)}" for k, v in kwargs.items()]
        return f"{self.render_global(fn)}({', '.join(parts)})"

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
    entry = find_configurable(ref.name)
    if entry is None:
        raise _NotRenderable(repr(ref))
    return entry.target


def _is_importable(obj, module, qualname):
    bad_module = not module or module == "__main__" or module.startswith(CONF_MODULE_PREFIX)
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


# --------------------------------------------------------------------------- conf text


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
    if len(line) <= _MAX_LINE_LENGTH:
        return comments + [line]
    return comments + [f"{callee}("] + [f"    {p}," for p in parts] + [")"]


def _format_defined(renderer, values):
    lines = []
    for name, value in values.items():
        try:
            lines.append(f"alf.define_config({name!r}, {renderer.render(value)})")
        except _NotRenderable as error:
            text = str(error).replace("\n", " ")
            lines.append(f"# define_config {name}={text}  (not renderable as Python source)")
    return lines


def operative_config_str():
    """The operative configuration as a runnable Python conf file.

    It holds ``import`` lines, ``alf.define_config`` for the used defined configs and one
    ``alf.config('full.Name', arg=value, ...)`` per configurable whose configured values
    were used (a configurable called by an ``@Name()`` value comes before its caller),
    followed by the default values that were used, as comments. Values without a Python
    source form are written as comments.

    Returns:
        str: the conf text.
    """
    renderer = _Renderer()
    operative = get_operative_configs()
    configs = [c for c in operative if c[0] != DEFINED_CONFIGS_KEY]
    defined = dict(operative).get(DEFINED_CONFIGS_KEY, {})
    body = [""] + _format_defined(renderer, defined) if defined else []
    for name, args in _dependency_order(configs):
        body += [""] + _format_call(renderer, "alf.config", [repr(name)], args)
    header = ["# Operative configuration written by alf.config_util.operative_config_str().", ""]
    imports = ["import alf"] + [f"import {m}" for m in sorted(renderer.imports)]
    unused = _format_inoperative()
    lines = header + imports + body + _format_scoped() + _format_defaults(dict(configs)) + unused
    return "\n".join(lines) + "\n"


def _format_scoped() -> list[str]:
    """Comment lines listing the gin-scoped values (they have no ``alf.config`` form: they
    apply only to calls made through ``@scope/Name``; see ``scopes``)."""
    lines = [
        f"#   {scope}/{full_name}.{arg} = {slot.value!r}" + ("" if slot.used else "  (not used)")
        for scope, full_name, arg, slot in scopes.scoped_items()
        if slot.configured
    ]
    if not lines:
        return []
    return ["", "# gin-scoped values (gin syntax; they apply inside @scope/Name only):"] + lines


def _format_inoperative() -> list[str]:
    """Comment lines listing the configured values no call used (empty when none)."""
    lines = []
    for name, args in get_inoperative_configs():
        lines += [f"#   {name}.{arg} = {value!r}" for arg, value in sorted(args.items())]
    if not lines:
        return []
    return ["", "# Configured but not used by any call (an explicit argument won, or unused):"] + [
        line.replace("\n", " ") for line in lines
    ]


def _called_configurables(value):
    """Full names of the configurables that the ``@Name()`` references in ``value`` call."""
    if isinstance(value, ConfigurableRef):
        entry = find_configurable(value.name) if value.evaluate else None
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


def _format_defaults(operative):
    """Commented ``alf.config`` lines for the default values used, for reference.

    Args:
        operative (dict[str, dict[str, Any]]): the configured values used, per
            configurable (``get_operative_configs()``); their arguments are left out.
    """
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

    An instance of a subclass is recorded as a call of the subclass when the subclass
    inherits this ``__init__``; a subclass with its own, undecorated ``__init__`` takes
    other arguments, so its instances are not recorded (plain ``object`` repr).

    Args:
        cls (type): the class.

    Returns:
        type: the same class, with ``__init__`` recording its arguments and a ``__repr__``.
    """
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        if getattr(self, "_alf_repr_call", None) is None and _inherits(type(self), __init__):
            with contextlib.suppress(AttributeError):  # no instance __dict__ (__slots__)
                object.__setattr__(self, "_alf_repr_call", (type(self), args, kwargs))
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


def _inherits(klass, init_wrapper):
    """Whether ``klass.__init__`` is ``init_wrapper``, possibly wrapped (e.g. by
    ``alf.configurable``), so ``klass(...)`` takes the arguments ``init_wrapper`` gets."""
    return inspect.unwrap(klass.__init__, stop=lambda fn: fn is init_wrapper) is init_wrapper
