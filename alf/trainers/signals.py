"""SIGTERM and SIGINT during training: a flag the trainer checks, instead of an abrupt exit.

The first signal sets ``caught``: the trainer ends an evaluation at its next env step,
finishes the iteration in progress, writes a checkpoint and returns. An env step still
running ``grace`` seconds after the signal, or started later, is abandoned
(``alf.environments.step_guard.StepInterrupted``): a hung env, or an iteration that would
take long to finish, cannot hold the stop back. A second signal exits the process at once
with status ``128 + signum``; checkpoints are written atomically, so none is left
half-written.

With ``interrupt=True`` (start-up, when nothing is worth finishing) the first signal
raises ``StopRequested`` at once instead.

``RunStop`` is what the training loop asks: stop here, or (several learner ranks) stop
everywhere after this iteration.
"""

from __future__ import annotations

import os
import signal
import threading

from alf.environments import step_guard
from alf.parallel import collectives
from alf.trainers import data_parallel

STOP_GRACE_SECONDS = 3.0


class StopRequested(BaseException):
    """A stop signal during start-up (a ``BaseException``, like ``KeyboardInterrupt``, so
    that no ``except Exception`` on the way turns it into another error)."""


class SignalCatcher:
    """Turns SIGTERM/SIGINT into a flag checked between iterations (main thread only).

    Args:
        interrupt: raise ``StopRequested`` from the first signal instead of setting the flag.
        grace: seconds an env step may still run after the first signal.
    """

    def __init__(self, interrupt: bool = False, grace: float = STOP_GRACE_SECONDS):
        self.caught = None
        self._interrupt = interrupt
        self._grace = grace
        self._previous = {}

    def __enter__(self):
        if in_main_thread():
            step_guard.watch()  # wakes the main thread when a signal lands on another one
            for sig in (signal.SIGTERM, signal.SIGINT):
                if signal.getsignal(sig) is signal.SIG_IGN:
                    continue  # ignored on purpose (nohup, a background job): leave it so
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        name = signal.Signals(signum).name
        if self.caught is not None:  # the second one: no more waiting
            os.write(2, f"Received {name} again: exiting now, without a checkpoint\n".encode())
            os._exit(128 + signum)
        self.caught = name
        if self._interrupt:
            raise StopRequested(name)
        step_guard.request_stop(self._grace)

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        if self.caught is not None and not self._interrupt:
            step_guard.clear_stop()
        return False


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class RunStop:
    """Whether a training run is to stop: a stop signal caught by this process (its
    ``SignalCatcher``, set when the loop starts), and with several learner ranks, whether
    any rank caught one, as the ranks agree after each iteration (so that all of them stop
    after the same one)."""

    def __init__(self):
        self.catcher: SignalCatcher | None = None
        self._everywhere = False

    @property
    def caught(self) -> str | None:
        """The name of the signal caught here (None: none)."""
        return None if self.catcher is None else self.catcher.caught

    def requested(self) -> bool:
        """A stop signal arrived here (it ends an evaluation at the next env step)."""
        return self.caught is not None

    def agreed(self) -> bool:
        """A stop signal arrived: here, or with several learner ranks, at any rank as agreed
        at the end of the last iteration."""
        if collectives.is_active():
            return self._everywhere
        return self.requested()

    def agree_on_steps(self, steps: int | None) -> int | None:
        """The env steps of the iteration over all ranks (None when any rank abandoned it);
        also agrees on a stop signal any rank caught."""
        steps, self._everywhere = data_parallel.agree_on_iteration(steps, self.requested())
        return steps
