"""Setting and reading config values: ``config1``, ``config``, ``define_config``,
``get_config_value`` and ``validate_pending_configs``.

Internal module: use ``alf.config_util``. A value set for a name that matches nothing yet
is kept pending (``registry.PENDING``) and bound by ``apply_pending`` when its
target appears: a configurable registers, a config is defined or a gin macro is bound.
"""

from absl import logging

from alf.configuration import scopes, typecheck
from alf.configuration.registry import (
    DEFINED,
    IDENTIFIER_RE,
    MACROS,
    PENDING,
    REGISTRY,
    TYPED_PREFIXES,
    Pending,
    Slot,
    check_name,
    contains_lazy,
    find_configurable,
    lookup_slot,
    matches,
    named_slot,
    resolve,
    unknown_configurable_error,
    unknown_defined_error,
)


def assign(slot, name, value, mutable, raise_if_used):
    """Set ``slot`` to ``value`` following the mutable / raise_if_used rules."""
    if raise_if_used and slot.used:
        raise ValueError(
            f"Config '{name}' has already been used; set it before the code that uses it "
            "runs (or pass raise_if_used=False)."
        )
    if slot.configured and not slot.mutable:
        logging.info(
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
    slot.lazy = contains_lazy(value)


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
    check_name(config_name)
    if "." not in config_name:
        slot = named_slot(config_name)
        if slot is None:
            PENDING.append(Pending(config_name, value, mutable, raise_if_used))
        else:
            assign(slot, config_name, value, mutable, raise_if_used)
        return
    prefix, arg = config_name.rsplit(".", 1)
    entry = find_configurable(prefix)
    TYPED_PREFIXES.add(prefix)
    if entry is None:
        PENDING.append(Pending(config_name, value, mutable, raise_if_used))
        return
    slot = entry.slot(arg)
    typecheck.check_assigned(entry, _arg_name(entry, slot), value)
    assign(slot, f"{entry.full_name}.{arg}", value, mutable, raise_if_used)


def _arg_name(entry, slot):
    """The name of ``entry``'s argument whose slot is ``slot`` (ALF's aliases resolved)."""
    return next(name for name, s in entry.slots.items() if s is slot)


def config_scoped(scope, config_name, value, mutable=True):
    """Set ``config_name`` (``'Name.arg'``) for the calls made in gin scope ``scope``
    (a gin binding ``scope/Name.arg = value``; see ``alf.configuration.scopes``).

    The configurable must be known when the binding is read (one of alf's own, or one
    whose module the gin file imports first); there are no pending scoped values.

    Raises:
        ValueError: on an invalid scope or name, an unknown configurable or argument.
    """
    scopes.check_scope(scope)
    check_name(config_name)
    if "." not in config_name:
        raise ValueError(
            f"gin scope '{scope}' on the macro '{config_name}': only arguments of "
            "configurables ('scope/Name.arg') can be scoped in alf."
        )
    prefix, arg = config_name.rsplit(".", 1)
    entry = find_configurable(prefix)
    if entry is None:
        raise unknown_configurable_error(prefix)
    arg = _arg_name(entry, entry.slot(arg))
    typecheck.check_assigned(entry, arg, value, prefix=f"{scope}/")
    slots = scopes.SCOPED.setdefault((scope, entry.full_name), {})
    slot = slots.setdefault(arg, Slot())
    assign(slot, f"{scope}/{entry.full_name}.{arg}", value, mutable, raise_if_used=False)


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


def apply_pending(matches_fn, slot_fn, check_fn=None):
    """Bind the pending values accepted by ``matches_fn(name)`` to ``slot_fn(name)``, in
    the order they were set, each first checked by ``check_fn(slot, value)`` if given; the
    ones whose slot is None stay pending."""
    remaining = []
    for pending in PENDING:
        slot = slot_fn(pending.name) if matches_fn(pending.name) else None
        if slot is None:
            remaining.append(pending)
            continue
        if check_fn is not None:
            check_fn(slot, pending.value)
        assign(slot, pending.name, pending.value, pending.mutable, pending.raise_if_used)
    PENDING[:] = remaining


def apply_pending_to(entry):
    """Bind the pending ``'Name.arg'`` values whose ``Name`` matches ``entry``."""

    def matches_entry(name):
        return "." in name and matches(entry.full_name, name.rsplit(".", 1)[0])

    def check(slot, value):  # before any call can use it
        typecheck.check_assigned(entry, _arg_name(entry, slot), value)

    apply_pending(matches_entry, lambda name: entry.slots.get(name.rsplit(".", 1)[1]), check)


def apply_pending_to_name(name):
    """Bind the pending values set for the defined config or gin macro ``name``."""
    apply_pending(lambda pending_name: pending_name == name, lambda _: named_slot(name))


def define_config(name, default_value):
    """Define a conf-level variable, e.g. ``alf.define_config('num_envs', 8)``.

    Its value can be changed with ``alf.config1(name, value)`` (also before it is defined,
    e.g. from ``--conf_param 'num_envs=16'``), set by a gin binding ``num_envs = 16`` (also
    before it is defined, e.g. from ``--gin_param``), and read with
    ``get_config_value(name)`` or as ``%num_envs`` in a gin file.

    Args:
        name (str): a Python identifier (no dots: dotted names address configurables).
        default_value (Any): the value if nothing else sets it.

    Raises:
        ValueError: if ``name`` is not an identifier or is already defined.
    """
    if not isinstance(name, str) or not IDENTIFIER_RE.fullmatch(name):
        raise ValueError(f"define_config name {name!r} must be a Python identifier.")
    if name in DEFINED:
        raise ValueError(f"Config '{name}' is already defined.")
    slot = MACROS.pop(name, None) or Slot()  # a gin macro of that name becomes this config
    slot.set_default(default_value)
    DEFINED[name] = slot
    apply_pending_to_name(name)


#: ALF stores ``define_config`` values under this prefix, and some ALF confs read them back
#: as ``alf.get_config_value('_CONFIG._USER.' + name)``.
ALF_USER_PREFIX = "_CONFIG._USER."


def get_config_value(config_name):
    """The value of a config (configured, else default) and mark it used.

    Args:
        config_name (str): ``'Name.arg'``, a name made by ``define_config`` (also as ALF
            names it, ``'_CONFIG._USER.name'``) or a gin macro.

    Returns:
        Any: the value; gin references and macros are resolved (``@Name()`` is called).

    Raises:
        ValueError: if the config is unknown or has neither a value nor a default.
    """
    if config_name.startswith(ALF_USER_PREFIX):  # ALF's internal name of a define_config
        config_name = config_name[len(ALF_USER_PREFIX) :]
    slot = lookup_slot(config_name)
    if not slot.configured and not slot.has_default:
        raise ValueError(f"Config '{config_name}' has neither a configured nor a default value.")
    slot.used = True
    return slot.resolved_value()


def validate_pending_configs():
    """Check that every configured name found its target, unambiguously.

    Call it once all modules that define configurables have been imported (e.g. after the
    conf file is loaded).

    Then every configured value is checked against what its configurable's signature
    accepts (``typecheck``: the annotation, or the default's kind, and declared ranges).

    Raises:
        ValueError: naming the first unresolved config and suggesting close valid names,
            or naming a configurable name that has become ambiguous, or an unknown gin
            ``@Name`` reference; ``typecheck.ConfigRangeError`` (a ``ValueError``) for a
            number out of its argument's range.
        TypeError: ``typecheck.ConfigTypeError``, one line naming the value that is not
            of the kind its argument accepts, e.g. ``PPOLoss.gamma='high': expected a
            float, got str``.
    """
    for pending in PENDING:
        if "." not in pending.name:
            raise unknown_defined_error(pending.name)
        prefix, arg = pending.name.rsplit(".", 1)
        entry = find_configurable(prefix)
        if entry is None:
            raise unknown_configurable_error(prefix)
        entry.slot(arg)
    for prefix in sorted(TYPED_PREFIXES):
        find_configurable(prefix)
    for slot in _configured_slots():
        if slot.lazy:
            resolve(slot.value, evaluate=False)
    typecheck.check_configured_values()


def _configured_slots():
    slots = [s for e in REGISTRY.values() for s in e.slots.values()]
    return [s for s in slots + list(DEFINED.values()) if s.configured]


def get_all_config_names():
    """Sorted ``'full.Name.arg'`` of every configurable argument, plus defined configs."""
    names = [f"{full}.{arg}" for full, entry in REGISTRY.items() for arg in entry.slots]
    return sorted(names + list(DEFINED))


def check_command_line_applied():
    """After the objects of a run are built: raise for a command-line (immutable) value that
    no call used because every call passed the argument explicitly (an explicit argument
    wins over a configured one), so that it is never recorded as applied while it was not.

    Returns:
        list[str]: the other configured values no call has used (yet), ``'Name.arg'``.

    Raises:
        ValueError: naming the value and why it was not applied.
    """
    unused = []
    for full_name, entry in REGISTRY.items():
        short = full_name.rsplit(".", 1)[-1]
        for arg, slot in entry.slots.items():
            if not slot.configured or slot.used:
                continue
            if slot.overridden and not slot.mutable:
                raise ValueError(
                    f"the command-line value {short}.{arg}={slot.value!r} was not applied: "
                    f"every call of {short} passed '{arg}' explicitly (in the conf file?), "
                    f"and an explicit argument wins; change the value where it is passed"
                )
            unused.append(f"{short}.{arg}")
    for scope, full_name, arg, slot in scopes.scoped_items():
        if slot.configured and not slot.used:
            unused.append(f"{scope}/{full_name.rsplit('.', 1)[-1]}.{arg}")
    return unused
