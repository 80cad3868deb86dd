"""Checking configured values against what their configurable's signature accepts.

Internal module: ``binding.validate_pending_configs`` runs ``check_configured_values``
once the conf is loaded, before anything is built or written, and ``TrainerConfig``
checks its fields with ``check_value``. A mismatch is one line naming the argument, the
value and what was expected::

    PPOLoss.gamma='high': expected a float, got str
    PPOLoss.gamma=1.5: expected a float in (0, 1]

What an argument accepts (``accepted_hint``):

- its annotation, resolved with ``typing.get_type_hints`` (string annotations of
  ``from __future__ import annotations`` too); one that cannot be resolved is not checked;
- else, inferred from its default where that is safe: a number or bool default refuses a
  string (``'high'`` for ``gamma=0.99``) and accepts anything else, since untyped (ALF)
  code often gives such arguments other kinds (a float for ``clip=1``, a list of gammas
  for ``gamma=0.99``, a schedule, None); a str default, or any other, checks nothing
  (``padding='same'`` may take an int).

Kinds (``accepts``): ``int`` (not a bool), ``float`` (an int too), ``bool`` (not an int;
``Flag`` also takes 0 / 1), ``str``, ``None``, ``tuple[...]``, ``list[...]``,
``Sequence[...]`` (a list or a tuple, elements checked), ``dict``, ``Callable``, ``type``
(``type[X]``: a subclass of X), ``Literal[...]``, unions and ``Optional``, ``Schedule``,
any other class by ``isinstance``; anything else (``Any``, ``object``, type variables)
accepts everything. Ranges (``argtypes.Range`` in ``Annotated``) apply to numbers. A gin
``@Name()`` (evaluated at each use) is not checked; ``@Name`` is a callable; ``%MACRO`` is
checked as its value.
"""

from __future__ import annotations

import collections.abc
import inspect
import numbers
import sys
import types
import typing

from alf.configuration import scopes
from alf.configuration.argtypes import (
    BoolNotText,
    NumberNotText,
    Range,
    ZeroOrOne,
)
from alf.configuration.argtypes import (
    is_bool as _is_bool,
)
from alf.configuration.argtypes import (
    is_number as _is_number,
)
from alf.configuration.registry import LAZY_TYPES, REGISTRY, contains_lazy, resolve

_NONE_TYPE = type(None)
_SEQUENCES = (tuple, list, collections.abc.Sequence, collections.abc.MutableSequence)
_HINTS = {}  # id(Configurable) -> (Configurable, {arg: hint or None})


class ConfigValueError(ValueError):
    """A configured value its argument does not accept (the message is the one line)."""


class ConfigTypeError(ConfigValueError, TypeError):
    """A configured value of the wrong kind."""


class ConfigRangeError(ConfigValueError):
    """A configured number out of its argument's range."""


# --------------------------------------------------------------------------- hints


def _module_globals(fn) -> dict:
    fn = inspect.unwrap(fn)
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    return getattr(fn, "__globals__", None) or getattr(module, "__dict__", {})


class _Annotations:
    def __init__(self, annotations):
        self.__annotations__ = annotations


def _resolve(annotation, globalns):
    """The annotation (a string is evaluated in ``globalns``), or None when unresolvable."""
    try:
        hints = typing.get_type_hints(
            _Annotations({"x": annotation}), globalns=globalns, include_extras=True
        )
    except Exception:  # a name imported only for type checkers, a syntax it lacks, ...
        return None
    return hints["x"]


def _inferred(default):
    """What an unannotated argument with this default accepts (None: anything)."""
    if isinstance(default, bool):
        return BoolNotText
    if isinstance(default, (int, float)):
        return NumberNotText
    return None


def signature_hints(fn, names) -> dict:
    """``{arg: hint or None}`` for the arguments ``names`` of ``fn``."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return dict.fromkeys(names)
    globalns = _module_globals(fn)
    hints = {}
    for name in names:
        param = params.get(name)
        if param is None:
            hints[name] = None
        elif param.annotation is not param.empty:
            hints[name] = _resolve(param.annotation, globalns)
        else:
            hints[name] = _inferred(param.default)
    return hints


def accepted_hint(entry, arg):
    """The hint the configured values of ``entry``'s argument ``arg`` are checked against
    (None: anything), resolved once per configurable."""
    cached = _HINTS.get(id(entry))
    if cached is None or cached[0] is not entry:
        fn = getattr(entry, "fn", None)
        hints = signature_hints(fn, list(entry.slots)) if fn is not None else {}
        cached = (entry, hints)
        if _resolved(fn, hints):  # else a module still being imported: try again later
            _HINTS[id(entry)] = cached
    return cached[1].get(arg)


def _resolved(fn, hints) -> bool:
    """Whether every annotated argument of ``fn`` among ``hints`` resolved."""
    if fn is None:
        return True
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return all(
        hint is not None or params[name].annotation is inspect.Parameter.empty
        for name, hint in hints.items()
        if name in params
    )


# --------------------------------------------------------------------------- accepting


def _split_annotated(hint):
    """``(base, markers)`` of ``Annotated[base, *markers]``; ``(hint, ())`` otherwise."""
    if typing.get_origin(hint) is typing.Annotated:
        return hint.__origin__, hint.__metadata__
    return hint, ()


def _accepts_plain(value, hint) -> bool:
    if hint is int:
        return isinstance(value, numbers.Integral) and not _is_bool(value)
    if hint is float:
        return isinstance(value, numbers.Real) and not _is_bool(value)
    if hint is bool:
        return _is_bool(value)
    if hint is _NONE_TYPE or hint is None:
        return value is None
    if hint in (typing.Any, object) or not isinstance(hint, type):
        return True  # Any, a type variable, a forward reference: not checked
    if hint is type:
        return isinstance(value, type)
    if hint in _SEQUENCES:
        return isinstance(value, (list, tuple))
    if hint is collections.abc.Callable:
        return callable(value)
    try:
        return isinstance(value, hint)
    except TypeError:  # e.g. a protocol that is not runtime-checkable: not checked
        return True


def _accepts_sequence(value, hint, args, ranges) -> bool:
    if not isinstance(value, (list, tuple)):
        return False
    if hint is tuple and args and args[-1] is not Ellipsis:
        fixed = args != ((),)
        return (len(value) == len(args) if fixed else not value) and all(
            accepts(v, a, ranges) for v, a in zip(value, args if fixed else ())
        )
    return not args or all(accepts(v, args[0], ranges) for v in value)


def _accepts_generic(value, origin, args, ranges) -> bool:
    if origin in (typing.Union, types.UnionType):
        return any(accepts(value, a, ranges) for a in args)
    if origin is typing.Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if origin in _SEQUENCES:
        return _accepts_sequence(value, origin, args, ranges)
    if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping):
        return isinstance(value, collections.abc.Mapping)
    if origin is type:
        return inspect.isclass(value) and (
            not args or not inspect.isclass(args[0]) or issubclass(value, args[0])
        )
    if origin is collections.abc.Callable:
        return callable(value)
    return _accepts_plain(value, origin)


def accepts(value, hint, ranges=True) -> bool:
    """Whether ``value`` is what ``hint`` describes (and, with ``ranges``, in its range)."""
    if hint is None or isinstance(value, LAZY_TYPES):
        return True  # nothing declared, or a gin @Name() evaluated at each use
    base, markers = _split_annotated(hint)
    if base is bool and _is_zero_or_one(value) and any(isinstance(m, ZeroOrOne) for m in markers):
        return True
    origin = typing.get_origin(base)
    if origin is None:
        ok = _accepts_plain(value, base)
    else:
        ok = _accepts_generic(value, origin, typing.get_args(base), ranges)
    if not ok or not ranges or not _is_number(value):
        return ok
    return all(value in m for m in markers if isinstance(m, Range))


def is_flag(hint) -> bool:
    """Whether ``hint`` is ``argtypes.Flag`` (a bool that takes 0 / 1), or a union with it."""
    base, markers = _split_annotated(hint)
    if base is bool:
        return any(isinstance(m, ZeroOrOne) for m in markers)
    if typing.get_origin(base) in (typing.Union, types.UnionType):
        return any(is_flag(a) for a in typing.get_args(base))
    return False


def _is_zero_or_one(value) -> bool:
    """An integer (not a bool) equal to 0 or 1."""
    return isinstance(value, numbers.Integral) and not _is_bool(value) and value in (0, 1)


# --------------------------------------------------------------------------- describing


def _article(text: str) -> str:
    return f"an {text}" if text[:1] in "aeiou" else f"a {text}"


def _name(hint) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _describe_generic(origin, args, ranges) -> str:
    if origin in (typing.Union, types.UnionType):
        return " or ".join(dict.fromkeys(describe(a, ranges) for a in args))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in _SEQUENCES:
        kind = {tuple: "tuple", list: "list"}.get(origin, "sequence")
        if not args or args == ((),):
            return f"a {kind}" if not args else "an empty tuple"
        if origin is tuple and args[-1] is not Ellipsis:
            return f"a tuple ({', '.join(_bare(a, ranges) for a in args)})"
        return f"a {kind} of {_bare(args[0], ranges)}"
    if origin is type:
        return f"a subclass of {_name(args[0])}" if args else "a class"
    if origin is collections.abc.Callable:
        return "a callable"
    return describe(origin, ranges)


def _bare(hint, ranges) -> str:
    """``describe`` without the article: ``int``, ``float > 0``."""
    text = describe(hint, ranges)
    return text.split(" ", 1)[1] if text.startswith(("a ", "an ")) else text


def _describe_plain(base) -> str:
    if hasattr(base, "description"):
        return base.description
    if base is collections.abc.Callable:
        return "a callable"
    if base is type:
        return "a class"
    if base in _SEQUENCES:
        return {tuple: "a tuple", list: "a list"}.get(base, "a sequence")
    return _article(_name(base))


def describe(hint, ranges=True) -> str:
    """What ``hint`` accepts, in words: ``a float``, ``an int >= 1 or None`` (without the
    ranges: ``an int or None``)."""
    base, markers = _split_annotated(hint)
    if base is _NONE_TYPE or base is None:
        return "None"
    bounds = " ".join(str(m) for m in markers if isinstance(m, Range)) if ranges else ""
    origin = typing.get_origin(base)
    if bounds and origin in (typing.Union, types.UnionType):  # the bounds are the numbers'
        return " or ".join(
            f"{describe(a)} {bounds}" if a in (int, float) else describe(a)
            for a in typing.get_args(base)
        )
    text = (
        _describe_plain(base)
        if origin is None
        else _describe_generic(origin, typing.get_args(base), ranges)
    )
    return f"{text} {bounds}" if bounds else text


# --------------------------------------------------------------------------- checking


def check_value(name: str, value, hint) -> None:
    """Raise ``ConfigTypeError`` / ``ConfigRangeError`` (one line naming ``name``) unless
    ``value`` is what ``hint`` accepts.

    Args:
        name: how the message names the argument, e.g. ``'PPOLoss.gamma'``.
        value: the configured value (gin references and macros resolved).
        hint: the accepted type (``accepted_hint``); None accepts anything.
    """
    if accepts(value, hint):
        return
    if not accepts(value, hint, ranges=False):
        expected = describe(hint, ranges=False)
        got = type(value).__name__
        if isinstance(value, (list, tuple)) and 0 < len(value) <= 8:  # (int, str): the culprit
            got = f"{_article(got)} ({', '.join(type(v).__name__ for v in value)})"
        raise ConfigTypeError(f"{name}={value!r}: expected {expected}, got {got}")
    raise ConfigRangeError(f"{name}={value!r}: expected {describe(hint)}")


def check_assigned(entry, arg: str, value, prefix: str = "") -> None:
    """Check ``value`` set for ``entry``'s argument ``arg`` as it is set (a value holding a
    gin reference or macro waits for ``check_configured_values``); ``prefix`` (a gin
    scope, ``'train/'``) heads the name in the message."""
    if not contains_lazy(value):
        name = f"{prefix}{_short(entry.full_name)}.{arg}"
        check_value(name, value, accepted_hint(entry, arg))


def _short(full_name: str) -> str:
    return full_name.rsplit(".", 1)[-1]


def check_configured_values() -> None:
    """Check every configured argument of every registered configurable (and every value
    bound in a gin scope) against what its signature accepts.

    Raises:
        ConfigTypeError, ConfigRangeError: naming the first value that does not fit.
    """
    for full_name, entry in sorted(REGISTRY.items()):
        for arg, slot in entry.slots.items():
            if slot.configured:
                value = resolve(slot.value, evaluate=False) if slot.lazy else slot.value
                check_value(f"{_short(full_name)}.{arg}", value, accepted_hint(entry, arg))
    for scope, full_name, arg, slot in scopes.scoped_items():
        entry = REGISTRY.get(full_name)
        if entry is not None and slot.configured:
            value = resolve(slot.value, evaluate=False) if slot.lazy else slot.value
            name = f"{scope}/{_short(full_name)}.{arg}"
            check_value(name, value, accepted_hint(entry, arg))
