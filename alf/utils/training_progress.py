"""``Progress``: how far a training run is, as the schedules of its hyperparameters read it.

A ``Progress`` holds three numbers: the iterations done, the environment steps done,
and the fraction of the training budget done (``percent``, in [0, 1]). The trainer owns
one per run (``alf.trainers.run_state.RunState.progress``), updates it at the start of
every iteration, and puts it in use for the run (``progress_in_use``), so that a
scheduler built by a conf before the run existed (``Adam.lr = LinearScheduler(...)``)
reads that run's progress. A scheduler may also be given its own ``Progress``
(``LinearScheduler(..., progress=p)``) and then reads nothing else.

Outside any run, the progress in use is a default ``Progress`` object, the one
``alf.utils.schedulers.update_progress`` and ``get_progress`` (thin wrappers kept for
tests, benchmarks and remote samplers, which mirror their learner's progress) act upon.
"""

from __future__ import annotations

import contextlib
import threading

#: what a scheduler's ``progress_type`` may name
PROGRESS_TYPES = ("env_steps", "iterations", "percent")


class Progress:
    """The progress of one training run (all zeros when built).

    Attributes:
        iterations: training iterations done.
        env_steps: environment steps done.
        percent: fraction of the training budget done, in [0, 1].
    """

    def __init__(self):
        self.iterations = 0
        self.env_steps = 0
        self.percent = 0.0

    def update(self, iterations: int, env_steps: int, percent: float) -> None:
        """Record the progress (``percent`` is clipped to [0, 1])."""
        self.iterations = int(iterations)
        self.env_steps = int(env_steps)
        self.percent = min(1.0, max(0.0, float(percent)))

    def get(self, progress_type: str = "percent") -> float:
        """``'percent'`` (in [0, 1]), ``'iterations'`` or ``'env_steps'``."""
        check_progress_type(progress_type)
        return getattr(self, progress_type)

    def __repr__(self) -> str:
        return (
            f"Progress(iterations={self.iterations}, env_steps={self.env_steps}, "
            f"percent={self.percent:g})"
        )


def check_progress_type(progress_type: str) -> None:
    """A ``ValueError`` naming ``progress_type`` unless it is one of ``PROGRESS_TYPES``."""
    if progress_type not in PROGRESS_TYPES:
        raise ValueError(
            f"Unknown progress_type '{progress_type}'; expected one of {list(PROGRESS_TYPES)}"
        )


_DEFAULT = Progress()
_in_use: list[Progress] = []  # innermost last; read by every thread (inference servers too)
_lock = threading.Lock()


def default_progress() -> Progress:
    """The ``Progress`` in use when no run has put one in use."""
    return _DEFAULT


def current_progress() -> Progress:
    """The ``Progress`` of the run in progress (the innermost ``progress_in_use``), else
    the default one."""
    with _lock:
        return _in_use[-1] if _in_use else _DEFAULT


@contextlib.contextmanager
def progress_in_use(progress: Progress):
    """Within the block, schedulers without a ``Progress`` of their own read ``progress``."""
    with _lock:
        _in_use.append(progress)
    try:
        yield progress
    finally:
        with _lock:
            # the last entry that is this object (blocks nest; this stays right if they do not)
            for i in range(len(_in_use) - 1, -1, -1):
                if _in_use[i] is progress:
                    del _in_use[i]
                    break
