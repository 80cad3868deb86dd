"""gin scopes: ``scope/Name.arg = value`` bindings and ``@scope/Name`` references.

Internal module: used by ``registry``, ``binding`` and ``gin_reader``. As in gin, a value
bound as ``actor/ActorDistributionNetwork.fc_layer_params = (100,)`` applies only to calls
made while the scope ``actor`` is active, and a scope is active during a call made
through the reference ``@actor/ActorDistributionNetwork`` (``@actor/Adam()`` for an
evaluated one), including the calls nested inside it: with
``ActorCriticAlgorithm.actor_network_ctor = @actor/ActorDistributionNetwork`` the actor
network gets the ``actor`` values and the value network (built without a scope) does not.
Inside nested scopes the innermost scope that binds an argument wins; an argument that no
active scope binds takes the unscoped value (then the inherited one, then the default).

State: ``SCOPED`` maps ``(scope, full configurable name)`` to ``{arg: Slot}``;
``ACTIVE`` is the stack of active scopes (one process, one thread builds the objects).
"""

import contextlib
import functools
import re

SCOPE_RE = re.compile(r"[A-Za-z_][\w.]*(/[A-Za-z_][\w.]*)*")
"""A gin scope: ``actor`` or nested ``outer/inner`` (match with ``fullmatch``)."""

SCOPED = {}  # (scope, full configurable name) -> {arg: Slot}
ACTIVE = []  # active scopes, outermost first (each one a single name)


def reset_scopes():
    """Forget every scoped value (part of ``reset_configs``)."""
    SCOPED.clear()
    ACTIVE.clear()


def check_scope(scope):
    """Raise ``ValueError`` unless ``scope`` is ``name`` or ``outer/inner``."""
    if not SCOPE_RE.fullmatch(scope or ""):
        raise ValueError(f"Invalid gin scope {scope!r}: expected 'name' or 'outer/inner'.")


def scoped_slot_for(full_name, arg):
    """The configured slot of ``arg`` of configurable ``full_name`` in the innermost active
    scope that binds it (a nested scope ``a/b`` binds while ``a`` then ``b`` are active),
    or None."""
    if not ACTIVE or not SCOPED:
        return None
    for depth in range(len(ACTIVE), 0, -1):
        for start in range(depth):
            scope = "/".join(ACTIVE[start:depth])
            slot = SCOPED.get((scope, full_name), {}).get(arg)
            if slot is not None and slot.configured:
                return slot
    return None


def scoped_items():
    """``[(scope, full_name, arg, slot)]`` of every scoped value, sorted."""
    return sorted(
        (
            (scope, full, arg, slot)
            for (scope, full), slots in SCOPED.items()
            for arg, slot in slots.items()
        ),
        key=lambda item: item[:3],
    )


def active_scopes():
    """The active scopes now (a tuple, outermost first): what an object built now sees."""
    return tuple(ACTIVE)


@contextlib.contextmanager
def scopes_activated(active):
    """Run the block with exactly ``active`` (from ``active_scopes()``) active, e.g. to
    build the twin of an object with the scoped values the original was built with."""
    saved = ACTIVE[:]
    ACTIVE[:] = list(active)
    try:
        yield
    finally:
        ACTIVE[:] = saved


def in_scope(scope, target):
    """``target`` wrapped so that every call runs with ``scope`` active (nested scopes
    ``a/b`` push ``a`` then ``b``)."""
    parts = scope.split("/")

    @functools.wraps(target, updated=())
    def _scoped(*args, **kwargs):
        ACTIVE.extend(parts)
        try:
            return target(*args, **kwargs)
        finally:
            del ACTIVE[len(ACTIVE) - len(parts) :]

    _scoped.alf_gin_scope = scope
    _scoped.alf_scoped_target = target
    return _scoped
