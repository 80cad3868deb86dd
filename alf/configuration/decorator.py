"""The ``@alf.configurable`` decorator: registers functions and classes.

Internal module: use ``alf.config_util``. A decorated function is replaced by a wrapper
that injects the configured values of the arguments its caller did not pass; for a class,
its constructor (``__init__``, or ``__new__`` for named tuples) is wrapped in place.
"""

import functools
import inspect

from absl import logging

from alf.configuration.binding import apply_pending_to
from alf.configuration.registry import CLASS_ENTRIES, PENDING, REGISTRY, Configurable


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
    """Add ``entry`` to the registry and bind its pending values. A configurable that is
    registered again (e.g. its module is reloaded) keeps the values configured so far."""
    previous = REGISTRY.get(entry.full_name)
    if previous is not None:
        logging.debug("Configurable '%s' is registered again.", entry.full_name)
        PENDING[:0] = previous.configured_as_pending()
    REGISTRY[entry.full_name] = entry
    apply_pending_to(entry)


def _set_alf_bases(entry, alf_bases):
    """Check and keep ``configurable``'s ``alf_bases`` on ``entry``."""
    if not isinstance(alf_bases, dict):
        raise ValueError(f"alf_bases of '{entry.full_name}' must be a dict, got {alf_bases!r}.")
    for base_name, args in alf_bases.items():
        unknown = [arg for arg in args if arg not in entry.slots]
        if "." not in str(base_name) or unknown:
            raise ValueError(
                f"alf_bases of '{entry.full_name}': expected the full name of a class and "
                f"arguments of '{entry.full_name}', got {base_name!r}: {list(args)}."
            )
    entry.alf_bases = tuple((name, frozenset(args)) for name, args in alf_bases.items())


def _decorate_class(cls, full_name, whitelist, blacklist, alf_bases):
    attr, fn = _construction_fn(cls)
    entry = Configurable(full_name, fn, True, whitelist, blacklist)
    _set_alf_bases(entry, alf_bases)
    if fn is not None:
        wrapper = _make_wrapper(fn, entry)
        setattr(cls, attr, staticmethod(wrapper) if attr == "__new__" else wrapper)
    entry.target = cls
    CLASS_ENTRIES[cls] = entry
    _register(entry)
    return cls


def _decorate(obj, name, whitelist, blacklist, alf_bases):
    if whitelist and blacklist:
        raise ValueError("alf.configurable() takes a whitelist or a blacklist, not both.")
    if not callable(obj):
        raise ValueError(f"alf.configurable() can only decorate a callable, got {obj!r}.")
    full_name = _full_name(obj, name)
    if inspect.isclass(obj):
        return _decorate_class(obj, full_name, whitelist, blacklist, alf_bases)
    entry = Configurable(full_name, obj, False, whitelist, blacklist)
    _set_alf_bases(entry, alf_bases)
    entry.target = _make_wrapper(obj, entry)
    _register(entry)
    return entry.target


def configurable(fn_or_name=None, whitelist=(), blacklist=(), alf_bases=None):
    """Make a function or class configurable with ``alf.config``.

    Usable as ``@alf.configurable``, ``@alf.configurable('Name')`` or
    ``@alf.configurable(whitelist=['lr'])``. For a class, the arguments of its constructor
    (``__init__``, or ``__new__`` for named tuples) are configured and the class itself is
    returned, so ``isinstance`` and subclassing work. A subclass is a separate configurable
    only if decorated itself; otherwise its ``super().__init__`` call uses the parent's
    configured values. A decorated subclass takes, for an argument not configured for it,
    the value configured for its nearest configurable base class with that argument.

    Configured values are defaults: arguments passed explicitly by the caller win.

    ``alf_bases`` names classes that ALF's class of this name derives from but this one
    does not (ALF's ``DqnAlgorithm`` is a ``SacAlgorithm``), each with the arguments that
    ALF's class leaves to it: an argument listed there that is configured neither for
    this class nor for a configurable base class takes the value configured for that
    ALF base, as ALF's ``super().__init__`` call would.

    Args:
        fn_or_name (Callable|str|None): the decorated object, or an explicit name. A name
            without dots is prefixed with the module name; a dotted name is used as is.
        whitelist (Iterable[str]): only these arguments are configurable.
        blacklist (Iterable[str]): these arguments are not configurable.
        alf_bases (dict[str, Iterable[str]] | None): full class name -> arguments (above).

    Returns:
        The decorated function or class, or a decorator when given a name or lists.
    """
    whitelist, blacklist = tuple(whitelist), tuple(blacklist)
    alf_bases = {} if alf_bases is None else alf_bases
    if callable(fn_or_name):
        return _decorate(fn_or_name, None, whitelist, blacklist, alf_bases)
    if fn_or_name is not None and not isinstance(fn_or_name, str):
        raise ValueError(f"alf.configurable() expects a callable or a name, got {fn_or_name!r}.")
    return lambda obj: _decorate(obj, fn_or_name, whitelist, blacklist, alf_bases)
