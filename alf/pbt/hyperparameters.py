"""Where a mutable hyperparameter lives in a built algorithm, and how to change it there.

PBT changes hyperparameters in the running process (no restart): each ``Name.arg`` of
``PBTConfig.mutation`` is resolved, once at start-up, to the places in the built
algorithm that hold its value, and ``Hyperparameter.set`` writes a new value to all of
them. Two kinds of ``Name`` are supported:

**An optimizer factory** (``Adam``, ``AdamW``, ``SGD``: any configurable that made one of
the algorithm's ``OptimizerSpec``; the spec remembers the call that made it). Every
optimizer of the algorithm made by that factory is changed:

- ``lr``: the spec's schedule becomes that constant (``update_lr`` sets it on every
  update) and the torch optimizer's param groups get it at once. An lr given as a
  schedule cannot be mutated (a schedule is not one number);
- ``gradient_clipping``: the spec's clipping norm;
- any other argument the torch optimizer keeps in its param groups (``eps``,
  ``weight_decay``, ``momentum``): the param groups' value.

**A configurable class** (``PPOLoss``, ``ActorCriticLoss``, ``PPOAlgorithm``, ...). Every
instance of it (subclasses included) reachable from the algorithm (its modules and the
plain objects they hold, such as the loss) is changed: the value lives in the attribute
``_<arg>`` or ``<arg>`` (a few renamed ones are listed in ``ATTRIBUTE_ALIASES``, e.g.
``td_lambda`` is ``_lambda``). An attribute holding a constant schedule (a value
documented as "float or scheduler", e.g. ``PPOLoss.importance_ratio_clipping``) is
replaced by a constant schedule of the new value. alf's losses and algorithms read these
attributes whenever they compute, so the new value is used from the next update on.

Anything else is an ``UnsupportedHyperparameter`` error at start-up, naming the value
and why: an unknown name, a plain function (its result is built once), ``TrainerConfig``
(read when the run is built), no instance or no attribute found, a value that is None or
not a number or a plain scalar, a schedule, several places holding different values, or
an attribute whose value differs from the configured one (then it is not where the
configured value went). Nothing is ignored silently.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
from collections.abc import Callable
from typing import Any

import torch

from alf.configuration import registry
from alf.optimizers import OptimizerSpec
from alf.utils.schedulers import ConstantScheduler

#: argument name -> attribute names (besides ``_<arg>`` and ``<arg>``) that hold its value
ATTRIBUTE_ALIASES = {
    "td_lambda": ("_lambda",),
    "importance_ratio_clipping": ("_ratio_clip",),
}

_REFUSED = {
    "TrainerConfig": "TrainerConfig values are read when the run is built",
}
_SCAN_DEPTH = 3
_NOT_SCANNED = (
    torch.nn.Module,
    torch.Tensor,
    type,
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    functools.partial,
)


class UnsupportedHyperparameter(ValueError):
    """A ``Name.arg`` that PBT cannot change in the running process (the message says why)."""


@dataclasses.dataclass
class _Place:
    """One place holding the value: a description, a getter and a setter."""

    where: str
    get: Callable[[], Any]
    set: Callable[[Any], None]


@dataclasses.dataclass
class Hyperparameter:
    """A mutable ``Name.arg`` and the places in the algorithm that hold its value."""

    name: str
    places: list

    def get(self):
        """The value (all places hold the same one)."""
        return self.places[0].get()

    def set(self, value) -> None:
        """Write ``value`` to every place."""
        for place in self.places:
            place.set(value)

    @property
    def where(self) -> str:
        """Where the value lives, for messages."""
        return ", ".join(p.where for p in self.places)


def _error(name: str, why: str) -> UnsupportedHyperparameter:
    return UnsupportedHyperparameter(
        f"PBTConfig.mutation: {name!r} cannot be changed in the running process: {why}"
    )


def _scalar(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (int, str, bool))


def _as_number_like(old, new):
    """``new`` with the type of ``old`` (a float stays a float: the fused Adam step needs it)."""
    if isinstance(old, float) and isinstance(new, (int, float)) and not isinstance(new, bool):
        return float(new)
    return new


# --------------------------------------------------------------------------- optimizers


def _spec_factory(spec: OptimizerSpec):
    call = getattr(spec, "_alf_repr_call", None)
    return call[0] if call else None


def _optimizer_places(name: str, arg: str, algorithm, factory) -> list[_Place]:
    places = []
    for i, (spec, optimizer, _) in enumerate(algorithm.optimizers()):
        if _spec_factory(spec) is not factory:
            continue
        where = f"optimizer {i} ({spec.name})"
        if arg == "lr":
            places.append(_lr_place(name, where, spec, optimizer))
        elif arg == "gradient_clipping":
            if not isinstance(spec.gradient_clipping, (int, float)):
                raise _error(name, f"{where} has gradient_clipping={spec.gradient_clipping!r}")
            places.append(_spec_attribute_place(where, spec, "gradient_clipping"))
        else:
            places.append(_param_group_place(name, arg, where, optimizer))
    if not places:
        raise _error(name, "no optimizer of the algorithm was made by it")
    return places


def _lr_place(name: str, where: str, spec: OptimizerSpec, optimizer) -> _Place:
    if not isinstance(spec.lr_scheduler, ConstantScheduler):
        raise _error(
            name,
            f"the lr of {where} is a schedule ({spec.lr_scheduler!r}); PBT mutates a "
            "constant lr: give the optimizer a number",
        )

    def set_lr(value):
        value = float(value)
        spec.lr_scheduler = ConstantScheduler(value)
        for group in optimizer.param_groups:
            group["lr"] = value

    return _Place(f"{where} lr", lambda: float(spec.lr_scheduler()), set_lr)


def _spec_attribute_place(where: str, spec: OptimizerSpec, attr: str) -> _Place:
    def set_value(value):
        setattr(spec, attr, float(value))

    return _Place(f"{where} {attr}", lambda: getattr(spec, attr), set_value)


def _param_group_place(name: str, arg: str, where: str, optimizer) -> _Place:
    groups = optimizer.param_groups
    values = {repr(group.get(arg)) for group in groups}
    if any(arg not in group for group in groups):
        raise _error(name, f"{where} ({type(optimizer).__name__}) has no option {arg!r}")
    if len(values) != 1 or not _scalar(groups[0][arg]) or isinstance(groups[0][arg], bool):
        raise _error(name, f"{where} holds {arg}={groups[0][arg]!r}, not one number")

    def set_value(value):
        for group in groups:
            group[arg] = _as_number_like(group[arg], value)

    return _Place(f"{where} {arg}", lambda: groups[0][arg], set_value)


# --------------------------------------------------------------------------- attributes


def _reachable_objects(algorithm) -> list:
    """The algorithm's modules, and the plain objects they hold (a few levels deep)."""
    seen, found = set(), []

    def visit(obj, depth):
        if id(obj) in seen or depth > _SCAN_DEPTH:
            return
        seen.add(id(obj))
        found.append(obj)
        attributes = getattr(obj, "__dict__", None)
        if not isinstance(attributes, dict):
            return
        for value in list(attributes.values()):
            if isinstance(value, _NOT_SCANNED):
                continue  # modules are visited from algorithm.modules()
            if hasattr(value, "__dict__") and not isinstance(value, (str, bytes)):
                visit(value, depth + 1)

    for module in algorithm.modules():
        visit(module, 0)
    return found


def _attribute_of(obj, arg: str) -> str | None:
    for attr in (f"_{arg}", arg, *ATTRIBUTE_ALIASES.get(arg, ())):
        if attr in getattr(obj, "__dict__", {}):
            return attr
    return None


def _configured_value(name: str):
    """The value configured for ``name`` that a call used, or ``_NONE``."""
    try:
        slot = registry.lookup_slot(name)
    except ValueError:
        return _NONE
    if not slot.configured or not slot.used or slot.overridden:
        return _NONE
    return slot.resolved_value(evaluate=False)


_NONE = object()


def _attribute_place(name: str, obj, attr: str) -> _Place:
    where = f"{type(obj).__name__}.{attr}"
    value = getattr(obj, attr)
    if isinstance(value, ConstantScheduler):

        def set_schedule(new):
            setattr(obj, attr, ConstantScheduler(_as_number_like(value(), new)))

        return _Place(where, lambda: getattr(obj, attr)(), set_schedule)
    if callable(value) and not isinstance(value, _NOT_SCANNED):
        raise _error(name, f"{where} is a schedule ({value!r}); PBT mutates constant values")
    if value is None:
        raise _error(name, f"{where} is None: give it a value in the conf to mutate it")
    if not _scalar(value):
        kind = type(value).__name__
        raise _error(name, f"{where} holds {value!r} ({kind}), not a number or a string")

    def set_value(new):
        setattr(obj, attr, _as_number_like(getattr(obj, attr), new))

    return _Place(where, lambda: getattr(obj, attr), set_value)


def _instance_places(name: str, arg: str, algorithm, cls) -> list[_Place]:
    instances = [obj for obj in _reachable_objects(algorithm) if isinstance(obj, cls)]
    if not instances:
        raise _error(name, f"the algorithm holds no {cls.__name__}")
    places = []
    for obj in instances:
        attr = _attribute_of(obj, arg)
        if attr is None:
            candidates = ", ".join((f"_{arg}", arg, *ATTRIBUTE_ALIASES.get(arg, ())))
            raise _error(name, f"{type(obj).__name__} has no attribute {candidates}")
        places.append(_attribute_place(name, obj, attr))
    configured = _configured_value(name)
    if configured is not _NONE and configured is not None and _scalar(configured):
        for place in places:
            if place.get() != configured:
                raise _error(
                    name,
                    f"{place.where} holds {place.get()!r}, not the configured {configured!r}, "
                    "so the value does not live there",
                )
    return places


# --------------------------------------------------------------------------- resolve


def resolve(name: str, algorithm) -> Hyperparameter:
    """The places in ``algorithm`` that hold ``name`` (``"Name.arg"``); see the module doc.

    Raises:
        UnsupportedHyperparameter: it cannot be changed in the running process (why).
    """
    prefix, _, arg = name.rpartition(".")
    try:
        entry = registry.find_configurable(prefix)
    except ValueError as e:
        raise _error(name, str(e)) from None
    if entry is None:
        raise _error(name, f"no configurable is named {prefix!r}")
    short = entry.full_name.rsplit(".", 1)[-1]
    if short in _REFUSED:
        raise _error(name, _REFUSED[short])
    if arg not in entry.params:
        raise _error(name, f"{entry.full_name} has no argument {arg!r}")
    target = entry.target
    factories = {_spec_factory(spec) for spec, _, _ in algorithm.optimizers()}
    if target in factories:
        places = _optimizer_places(name, arg, algorithm, target)
    elif isinstance(target, type):
        places = _instance_places(name, arg, algorithm, target)
    else:
        raise _error(
            name,
            f"{entry.full_name} is a function that made none of the algorithm's optimizers "
            "(what it returns is built once)",
        )
    values = {repr(place.get()) for place in places}
    if len(values) > 1:
        listed = "; ".join(f"{p.where}={p.get()!r}" for p in places)
        raise _error(name, f"its places hold different values ({listed}); PBT sets one for all")
    return Hyperparameter(name, places)


def resolve_all(names, algorithm) -> dict[str, Hyperparameter]:
    """``{name: resolve(name, algorithm)}`` for each name, in order."""
    return {name: resolve(name, algorithm) for name in names}
