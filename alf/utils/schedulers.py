"""Schedules of hyperparameters over training progress (learning rates, clip ranges, ...).

A scheduler is a callable returning the current value; ``as_scheduler`` turns a constant
into one, so any knob documented as "float or scheduler" accepts both. A scheduler reads
the ``Progress`` it was given, else the progress of the run in progress, which the trainer
owns and puts in use for the run (``alf.utils.training_progress``).

``update_progress`` and ``get_progress`` are thin wrappers over the ``Progress`` in use
(outside a run: a default ``Progress`` object), kept for tests, benchmarks and the remote
samplers, which mirror their learner's progress into it.
"""

from __future__ import annotations

import alf
from alf.utils.training_progress import Progress, check_progress_type, current_progress

__all__ = [
    "ConstantScheduler",
    "LinearScheduler",
    "Progress",
    "as_scheduler",
    "get_progress",
    "update_progress",
]


def update_progress(iterations: int, env_steps: int, percent: float) -> None:
    """Record training progress in the ``Progress`` in use (``Progress.update``).

    Args:
        iterations: training iterations done.
        env_steps: environment steps done.
        percent: fraction of the training budget done, in [0, 1].
    """
    current_progress().update(iterations, env_steps, percent)


def get_progress(progress_type: str = "percent") -> float:
    """The ``Progress`` in use: ``'percent'`` (in [0, 1]), ``'iterations'`` or
    ``'env_steps'``."""
    return current_progress().get(progress_type)


class ConstantScheduler:
    """Always ``value``."""

    def __init__(self, value: float):
        self._value = value

    def __call__(self) -> float:
        return self._value

    def __repr__(self) -> str:
        return f"ConstantScheduler({self._value!r})"


@alf.configurable
class LinearScheduler:
    """Piecewise-linear schedule over progress.

    Args:
        schedule: ``[(progress, value), ...]`` with increasing progress; the value
            is interpolated between points and held outside them. E.g.
            ``[(0, 1e-3), (1.0, 0.0)]`` decays linearly to 0 over training
            (Stable-Baselines3's ``lin_1e-3``).
        progress_type: ``'percent'``, ``'iterations'`` or ``'env_steps'``.
        progress: the ``Progress`` it reads (None: that of the run in progress,
            ``alf.utils.training_progress.current_progress``).
    """

    def __init__(self, schedule, progress_type: str = "percent", progress: Progress | None = None):
        if not schedule:
            raise ValueError("LinearScheduler needs at least one (progress, value) point")
        points = [(float(p), float(v)) for p, v in schedule]
        if any(b[0] < a[0] for a, b in zip(points, points[1:])):
            raise ValueError(f"LinearScheduler progress must increase: {schedule}")
        check_progress_type(progress_type)
        self._points = points
        self._progress_type = progress_type
        self._progress = progress

    def __call__(self) -> float:
        progress = self._progress if self._progress is not None else current_progress()
        x = progress.get(self._progress_type)
        points = self._points
        if x <= points[0][0]:
            return points[0][1]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            if x <= x1:
                return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        return points[-1][1]

    def __repr__(self) -> str:
        return f"LinearScheduler({self._points!r}, progress_type={self._progress_type!r})"


def as_scheduler(value):
    """A scheduler for ``value``.

    A callable is returned as is; a list of ``(progress, value)`` pairs becomes a
    ``LinearScheduler`` over the training percent (so a gin file can write
    ``Adam.lr = [(0, 1e-3), (1, 0.0)]``); anything else is a constant.
    """
    if callable(value):
        return value
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in value)
    ):
        return LinearScheduler(value)
    return ConstantScheduler(value)
