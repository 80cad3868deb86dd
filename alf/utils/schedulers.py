"""Schedules of hyperparameters over training progress (learning rates, clip ranges, ...).

The trainer reports progress with ``update_progress``; a scheduler is a callable
returning the current value. ``as_scheduler`` turns a constant into one, so any
knob documented as "float or scheduler" accepts both.
"""

from __future__ import annotations

import alf

_progress = {"iterations": 0, "env_steps": 0, "percent": 0.0}


def update_progress(iterations: int, env_steps: int, percent: float) -> None:
    """Record training progress (called by the trainer once per iteration).

    Args:
        iterations: training iterations done.
        env_steps: environment steps done.
        percent: fraction of the training budget done, in [0, 1].
    """
    _progress["iterations"] = int(iterations)
    _progress["env_steps"] = int(env_steps)
    _progress["percent"] = min(1.0, max(0.0, float(percent)))


def get_progress(progress_type: str = "percent") -> float:
    """Current progress: ``'percent'`` (in [0, 1]), ``'iterations'`` or ``'env_steps'``."""
    if progress_type not in _progress:
        raise ValueError(
            f"Unknown progress_type '{progress_type}'; expected one of {sorted(_progress)}"
        )
    return _progress[progress_type]


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
    """

    def __init__(self, schedule, progress_type: str = "percent"):
        if not schedule:
            raise ValueError("LinearScheduler needs at least one (progress, value) point")
        points = [(float(p), float(v)) for p, v in schedule]
        if any(b[0] < a[0] for a, b in zip(points, points[1:])):
            raise ValueError(f"LinearScheduler progress must increase: {schedule}")
        get_progress(progress_type)
        self._points = points
        self._progress_type = progress_type

    def __call__(self) -> float:
        x = get_progress(self._progress_type)
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
