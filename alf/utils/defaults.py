"""``with_defaults``: a function with other default values, for subclasses that only
change their parent's defaults."""

from __future__ import annotations

import functools
import inspect
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
