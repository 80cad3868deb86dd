"""What a configurable argument accepts, declared in its annotation.

The annotation of a configurable's argument is its contract: every configured value
(``alf.config``, ``--conf_param``, a gin binding) is checked against it before anything
is built or written (``alf.configuration.typecheck``). Plain types say the kind (``int``,
``float``, ``bool``, ``str``, ``tuple[int, ...]``, ``Callable``, ``X | None``, ...); the
markers here, put in ``typing.Annotated``, add what plain types cannot say, and the
aliases below name the common cases so that a signature stays readable::

    def __init__(self, gamma: Discount = 0.99, lr: LearningRate = 1e-3,
                 num_parallel_environments: Count = 1, skip: NonNegativeInt = 0): ...

A range applies to a plain number only: a schedule (``Schedule``) is accepted as it is
(an lr decaying to 0 is fine). This module is standard library only, light to import.
"""

from __future__ import annotations

import numbers
from typing import Annotated


class Range:
    """A numeric range marker: ``Annotated[float, Range(0, 1, low_open=True)]`` is
    ``0 < x <= 1``; a bound left None is unbounded."""

    __slots__ = ("high", "high_open", "low", "low_open")

    def __init__(self, low=None, high=None, low_open=False, high_open=False):
        self.low, self.high = low, high
        self.low_open, self.high_open = low_open, high_open

    def __contains__(self, x) -> bool:
        if x != x:  # NaN is in no range
            return False
        if self.low is not None and (x <= self.low if self.low_open else x < self.low):
            return False
        return self.high is None or (x < self.high if self.high_open else x <= self.high)

    def __str__(self) -> str:
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"in {left}{self.low}, {self.high}{right}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {self.high}"
        return ""

    def __repr__(self) -> str:
        return f"Range({self})"


class ZeroOrOne:
    """A marker for ``Annotated[bool, ZeroOrOne()]``: the integers 0 and 1 are accepted
    for the flag too (ALF's confs write ``TrainerConfig`` flags so)."""

    def __repr__(self) -> str:
        return "ZeroOrOne()"


def is_number(value) -> bool:
    """A real number that is not a bool."""
    return isinstance(value, numbers.Real) and not is_bool(value)


def is_bool(value) -> bool:
    """A bool, or numpy's (``numpy.bool`` / ``numpy.bool_``)."""
    return isinstance(value, bool) or type(value).__name__ in ("bool", "bool_")


def _is_schedule(value) -> bool:
    if callable(value):
        return True
    return (
        isinstance(value, (list, tuple))
        and len(value) > 0
        and all(
            isinstance(p, (list, tuple)) and len(p) == 2 and all(map(is_number, p)) for p in value
        )
    )


class _Kind(type):
    """Metaclass of the value kinds below: ``isinstance`` asks ``_accepts``."""

    def __instancecheck__(cls, value) -> bool:
        return cls._accepts(value)


class Schedule(metaclass=_Kind):
    """A schedule of a hyperparameter over training (``alf.utils.schedulers``): a callable
    returning the current value (``LinearScheduler``, ...) or ``[(progress, value), ...]``
    pairs of numbers (a piecewise-linear schedule, ``as_scheduler``). Use it in an
    annotation (``float | Schedule``) or ``isinstance``."""

    description = "a schedule"
    _accepts = staticmethod(_is_schedule)


def _is_not_text(value) -> bool:
    return not isinstance(value, (str, bytes))


class NumberNotText(metaclass=_Kind):
    """What an unannotated argument whose default is an int or a float accepts
    (``typecheck`` infers it): anything but a string (ALF's untyped arguments take lists
    of numbers, schedules, None, ...; a string there is always a mistake)."""

    description = "a number"
    _accepts = staticmethod(_is_not_text)


class BoolNotText(metaclass=_Kind):
    """What an unannotated argument whose default is a bool accepts: anything but a
    string (``0`` / ``1`` too, as ALF's confs write flags)."""

    description = "a bool"
    _accepts = staticmethod(_is_not_text)


Discount = Annotated[float, Range(0, 1, low_open=True)]
"""A discount factor (``gamma``): ``0 < x <= 1``."""

Probability = Annotated[float, Range(0, 1)]
"""A fraction or probability: ``0 <= x <= 1``."""

PositiveFloat = Annotated[float, Range(0, low_open=True)]
"""``x > 0``."""

NonNegativeFloat = Annotated[float, Range(0)]
"""``x >= 0``."""

Count = Annotated[int, Range(1)]
"""A count that must be at least 1 (environments, steps per unroll, minibatch size)."""

NonNegativeInt = Annotated[int, Range(0)]
"""A count where 0 means something (none, off, no limit)."""

LearningRate = Annotated[float | Schedule, Range(0, low_open=True)]
"""A learning rate: a float ``> 0`` or a schedule."""

ScheduledFloat = float | Schedule
"""A float or a schedule (e.g. a clip range decaying over training)."""

Flag = Annotated[bool, ZeroOrOne()]
"""A bool that also takes 0 / 1 (``TrainerConfig``'s flags, as ALF's confs write them)."""
