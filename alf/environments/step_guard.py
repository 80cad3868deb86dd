"""Bounding an env step that runs on this process's main thread: a watchdog and prompt stops.

A worker process that hangs is bounded by ``ParallelAlfEnvironment``'s timeout, but an
env stepped in this process (``create_environment(nonparallel=True)``, and evaluation,
which runs in the main process by default) can only be interrupted from within: a
``SIGALRM`` whose handler raises in the middle of the step. The top-level batched envs
(``ThreadEnvironment``, ``BatchedEnvironment``, ``ParallelAlfEnvironment``) run every
``reset``/``step`` through a ``StepGuard``, which

* with a ``timeout`` (``create_environment.step_timeout`` for in-process envs), raises
  ``EnvironmentStepTimeout`` from a step that has taken longer than that, naming the env
  and the code it was stuck in;
* after ``request_stop(grace)`` (the trainer's SIGTERM/SIGINT handler calls it), raises
  ``StepInterrupted`` from a step still running ``grace`` seconds after the signal, and
  at once from any step that starts later, so that a stop signal ends an unroll within
  ``grace`` seconds even when the env never returns.

Off the main thread a guard does nothing (signals only reach the main thread). The cost
of a guarded step is a few attribute writes, plus a few system calls (``setitimer``,
``sigaction``) when a timeout is set. Limit: code that never returns to the interpreter
while holding the GIL (a C extension spinning in a loop) cannot be interrupted from
Python at all; run such an env in a worker process, whose timeout ends it from outside.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable


class StepInterrupted(Exception):
    """A stop signal came and an env step did not end within the grace period (or began
    after it): the step was abandoned."""


class EnvironmentStepTimeout(RuntimeError):
    """An in-process env step took longer than its ``step_timeout``."""


class _State:
    """What the ``SIGALRM`` handler needs to know: the step running now, the stop deadline."""

    def __init__(self):
        self.guard = None  # the StepGuard whose step is running on the main thread
        self.timeout_at = None  # monotonic time the running step times out
        self.stop_at = None  # monotonic time after which steps are interrupted
        self.saved = None  # (SIGALRM handler, itimer, time) to put back after the step


_state = _State()


def _where(frame) -> str:
    if frame is None:
        return ""
    code = frame.f_code
    return f" (stuck in {code.co_name} at {code.co_filename}:{frame.f_lineno})"


def _on_alarm(signum, frame) -> None:
    guard, now = _state.guard, time.monotonic()
    if guard is None:
        return  # a late alarm after the step ended
    if _state.stop_at is not None and now >= _state.stop_at - 1e-3:
        raise StepInterrupted(
            f"{guard.what}: a step was still running when the stop signal's grace period "
            f"ended{_where(frame)}; abandoned"
        )
    if _state.timeout_at is not None and now >= _state.timeout_at - 1e-3:
        raise EnvironmentStepTimeout(
            f"{guard.what}: a step took longer than step_timeout={guard.timeout:g} s{_where(frame)}"
        )
    _arm()  # woke early: wait for the rest


def _arm() -> None:
    """Set the alarm for the earliest of the running step's timeout and the stop deadline.

    ``SIGALRM``'s handler and the interval timer are shared with anyone else using them
    (pytest-timeout does): the first arming of a step saves theirs, ``_disarm`` puts
    them back, with the time the step took taken off the timer.
    """
    deadlines = [t for t in (_state.timeout_at, _state.stop_at) if t is not None]
    if not deadlines:
        return
    delay = max(min(deadlines) - time.monotonic(), 1e-3)
    if _state.saved is None:
        handler = signal.signal(signal.SIGALRM, _on_alarm)
        timer = signal.setitimer(signal.ITIMER_REAL, delay)
        _state.saved = (handler, timer, time.monotonic())
    else:
        signal.setitimer(signal.ITIMER_REAL, delay)


def _disarm() -> None:
    if _state.saved is None:
        return
    handler, (remaining, interval), armed_at = _state.saved
    _state.saved = None
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, signal.SIG_DFL if handler is None else handler)
    if remaining > 0:
        elapsed = time.monotonic() - armed_at
        signal.setitimer(signal.ITIMER_REAL, max(remaining - elapsed, 1e-3), interval)


def request_stop(grace: float) -> None:
    """From now on, a guarded step running ``grace`` seconds from now is interrupted.

    Called by a signal handler on the main thread; when a guarded step is running right
    now (the signal interrupted it), its alarm is armed at once.
    """
    _state.stop_at = time.monotonic() + grace
    if _state.guard is not None:
        _arm()


def clear_stop() -> None:
    """Forget a ``request_stop`` (the trainer that asked for it has finished)."""
    _state.stop_at = None


def stop_requested() -> bool:
    return _state.stop_at is not None


class StepGuard:
    """Runs one env's ``reset``/``step`` calls under the watchdog described in the module doc.

    Args:
        what: names the env in messages (e.g. ``"CartPole-v1 (env_id 0)"``).
        timeout: seconds a call may take before ``EnvironmentStepTimeout``; None: no limit.
    """

    def __init__(self, what: str, timeout: float | None = None):
        if timeout is not None and not timeout > 0:
            raise ValueError(f"step_timeout must be a positive number of seconds, got {timeout}")
        self.what = what
        self.timeout = timeout

    def call(self, fn: Callable, *args):
        """``fn(*args)``, interrupted as the module doc says."""
        if _state.guard is not None or threading.get_ident() != threading.main_thread().ident:
            return fn(*args)  # another thread, or nested in a guarded step
        stop_at = _state.stop_at
        if stop_at is not None and time.monotonic() >= stop_at:
            raise StepInterrupted(f"{self.what}: a stop signal came; this step was not started")
        _state.guard = self
        if self.timeout is not None:
            _state.timeout_at = time.monotonic() + self.timeout
        if self.timeout is not None or stop_at is not None:
            _arm()
        try:
            return fn(*args)
        finally:
            _disarm()
            _state.guard = None
            _state.timeout_at = None
