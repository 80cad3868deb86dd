"""Subclass constructors without repeating the parent's: ``with_defaults`` (other default
values only) and ``extends`` (the parent's arguments plus new ones)."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable


def with_defaults(fn: Callable, **defaults) -> Callable:
    """``fn`` with the default values of some of its arguments replaced by ``defaults``.

    Meant for a subclass that differs from its parent only in the defaults of its
    constructor::

        @alf.configurable
        class Td3Algorithm(DdpgAlgorithm):
            __init__ = with_defaults(DdpgAlgorithm.__init__, num_critic_replicas=2)

    The result's signature (``inspect.signature``) is ``fn``'s with the new defaults,
    so ``@alf.configurable`` on the subclass configures every argument of ``fn`` and
    records the subclass's defaults. Every call passes ``fn`` all its arguments
    explicitly (the caller's, else the new defaults, else ``fn``'s own), so when ``fn``
    is itself configurable (the parent's wrapped constructor) the parent's configured
    values never reach the subclass.

    Args:
        fn: the function (e.g. the parent's ``__init__``).
        **defaults: argument name → new default value.

    Returns:
        A function with the same arguments as ``fn`` and the new defaults.

    Raises:
        TypeError: if a name in ``defaults`` is not an argument of ``fn`` that can
            have a default.
    """
    signature = inspect.signature(fn)
    parameters = []
    for param in signature.parameters.values():
        if param.name in defaults:
            if param.kind in (param.POSITIONAL_ONLY, param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"with_defaults: argument '{param.name}' cannot take a default")
            param = param.replace(default=defaults[param.name])
        parameters.append(param)
    unknown = sorted(set(defaults) - set(signature.parameters))
    if unknown:
        raise TypeError(f"with_defaults: {unknown} are not arguments of {fn.__qualname__}")
    new_signature = signature.replace(parameters=parameters)

    @functools.wraps(fn)
    def call_with_defaults(*args, **kwargs):
        bound = new_signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return fn(*bound.args, **bound.kwargs)

    call_with_defaults.__signature__ = new_signature
    return call_with_defaults


def extends(parent: Callable, **defaults) -> Callable:
    """Decorator: a subclass constructor that takes its parent's arguments and adds its own.

    ``fn`` declares only its new arguments, keyword-only, and collects the parent's in
    ``**parent_args``::

        @alf.configurable
        class PPOAlgorithm(ActorCriticAlgorithm):
            @extends(ActorCriticAlgorithm.__init__, loss_class=PPOLoss, name="PPOAlgorithm")
            def __init__(self, *, target_kl: float | None = None, **parent_args):
                super().__init__(**parent_args)
                self._target_kl = target_kl

    The result's signature is the parent's (with ``defaults`` replacing some of its default
    values, as ``with_defaults``) followed by ``fn``'s new arguments, so ``@alf.configurable``
    configures and type-checks all of them and positional calls bind as the parent's do.
    ``fn`` receives every argument explicitly: its own by name, the parent's (the caller's,
    else the defaults) in ``parent_args``. The parent's string annotations are resolved
    where the parent is defined.

    Raises:
        TypeError: if ``fn`` has arguments other than ``self``, keyword-only ones and
            ``**parent_args``, if one of them repeats a parent argument, or if a name in
            ``defaults`` is not a parent argument that can have a default.
    """

    def decorate(fn: Callable) -> Callable:
        base = inspect.signature(with_defaults(parent, **defaults))
        base = base.replace(parameters=_resolved(parent, base.parameters.values()))
        own = list(inspect.signature(fn).parameters.values())
        added = [p for p in own if p.kind is p.KEYWORD_ONLY]
        kinds = [p.kind for p in own if p not in added]
        if kinds != [inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.VAR_KEYWORD]:
            raise TypeError(
                f"extends: {fn.__qualname__} must be (self, *, new arguments, **parent_args)"
            )
        repeated = sorted({p.name for p in added} & set(base.parameters))
        if repeated:
            raise TypeError(f"extends: {fn.__qualname__} repeats parent arguments {repeated}")
        tail = [p for p in base.parameters.values() if p.kind is p.VAR_KEYWORD]
        head = [p for p in base.parameters.values() if p.kind is not p.VAR_KEYWORD]
        signature = base.replace(parameters=head + added + tail)
        names = {p.name for p in added}

        @functools.wraps(fn)
        def constructor(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            self = arguments.pop(next(iter(signature.parameters)))
            mine = {name: arguments.pop(name) for name in names}
            return fn(self, **mine, **arguments)

        constructor.__signature__ = signature
        return constructor

    return decorate


def _resolved(fn: Callable, parameters) -> list:
    """``parameters`` of ``fn`` with string annotations evaluated in ``fn``'s module (left as
    they are where they cannot be)."""
    try:
        hints = typing.get_type_hints(inspect.unwrap(fn), include_extras=True)
    except Exception:  # a name imported only for type checkers: keep the strings
        hints = {}
    return [p.replace(annotation=hints.get(p.name, p.annotation)) for p in parameters]
