"""Bounding an env step that runs on this process's main thread: a watchdog and prompt stops.

A worker process that hangs is bounded by ``ParallelAlfEnvironment``'s timeout, but an
env stepped in this process (``create_environment(nonparallel=True)``, and evaluation,
which runs in the main process by default) can only be interrupted from within: a signal
whose handler raises in the middle of the step. The top-level batched envs
(``ThreadEnvironment``, ``BatchedEnvironment``, ``ParallelAlfEnvironment``) run every
``reset``/``step`` through a ``StepGuard``, which

* with a ``timeout`` (``create_environment.step_timeout`` for in-process envs), raises
  ``EnvironmentStepTimeout`` from a step that has taken longer than that, naming the env
  and the code it was stuck in;
* after ``request_stop(grace)`` (the trainer's SIGTERM/SIGINT handler calls it), raises
  ``StepInterrupted`` from a step still running ``grace`` seconds after the signal, and
  at once from any step that starts later, so that a stop signal ends an unroll within
  ``grace`` seconds even when the env never returns.

How: a daemon thread (``_Watchdog``) looks at the running step every 50 ms and, once a
deadline has passed, sends ``KICK_SIGNAL`` to the main thread itself
(``pthread_kill``), whose handler raises. Sending it to the thread matters: the kernel
may hand a signal sent to the process (``kill``, ``setitimer``) to any thread — torch
and tensorboard run several — and a main thread blocked in a system call (a hung
``sleep``, a socket read) would then never wake up. For the same reason the watchdog
listens on ``signal.set_wakeup_fd`` and kicks the main thread whenever SIGTERM or SIGINT
arrives, so that their handlers run at once (unless the wakeup fd is taken by someone
else, e.g. an asyncio loop).

Off the main thread a guard does nothing. A guarded step costs a few attribute writes;
the watchdog thread runs only once a timeout or a stop is in play. Limit: code that never
returns to the interpreter while holding the GIL (a C extension spinning in a loop)
cannot be interrupted from Python at all; run such an env in a worker process, whose
timeout ends it from outside.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections.abc import Callable

KICK_SIGNAL = signal.SIGURG  # ignored by default and used by nobody else here
_POLL_SECONDS = 0.05


class StepInterrupted(Exception):
    """A stop signal came and an env step did not end within the grace period (or began
    after it): the step was abandoned."""


class EnvironmentStepTimeout(RuntimeError):
    """An in-process env step took longer than its ``step_timeout``."""


class _State:
    """The step running on the main thread and its deadlines (shared with the watchdog)."""

    def __init__(self):
        self.guard = None  # the StepGuard whose step is running on the main thread
        self.step = 0  # counts guarded steps, so that each is kicked at most once
        self.timeout_at = None  # monotonic time the running step times out
        self.stop_at = None  # monotonic time after which steps are interrupted
        self.watchdog = None


_state = _State()


def _where(frame) -> str:
    if frame is None:
        return ""
    code = frame.f_code
    return f" (stuck in {code.co_name} at {code.co_filename}:{frame.f_lineno})"


def _overdue(now: float) -> bool:
    return any(t is not None and now >= t for t in (_state.stop_at, _state.timeout_at))


def _on_kick(signum, frame) -> None:
    """``KICK_SIGNAL``'s handler: raise out of the running step if it is overdue."""
    guard, now = _state.guard, time.monotonic()
    if guard is None:
        return  # a kick for a signal, or a late one after the step ended
    if _state.stop_at is not None and now >= _state.stop_at:
        raise StepInterrupted(
            f"{guard.what}: a step was still running when the stop signal's grace period "
            f"ended{_where(frame)}; abandoned"
        )
    if _state.timeout_at is not None and now >= _state.timeout_at:
        raise EnvironmentStepTimeout(
            f"{guard.what}: a step took longer than step_timeout={guard.timeout:g} s{_where(frame)}"
        )


class _Watchdog:
    """The thread that kicks the main thread (see the module doc). Started on the main
    thread, once per process; it lives as long as the process."""

    def __init__(self):
        self._main = threading.main_thread().ident
        signal.signal(KICK_SIGNAL, _on_kick)
        self._wakeup_read = self._take_wakeup_fd()
        self._kicked_step = None
        threading.Thread(target=self._run, name="alf-step-watchdog", daemon=True).start()

    @staticmethod
    def _take_wakeup_fd() -> int | None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        if previous != -1:  # someone else listens there: leave it to them
            signal.set_wakeup_fd(previous)
            os.close(read_fd)
            os.close(write_fd)
            return None
        return read_fd

    def _signals_arrived(self) -> bool:
        """Wait up to the poll interval; whether SIGTERM or SIGINT arrived meanwhile."""
        if self._wakeup_read is None:
            time.sleep(_POLL_SECONDS)
            return False
        ready, _, _ = select.select([self._wakeup_read], [], [], _POLL_SECONDS)
        if not ready:
            return False
        try:
            data = os.read(self._wakeup_read, 512)
        except BlockingIOError:
            return False
        return any(signum in (signal.SIGTERM, signal.SIGINT) for signum in data)

    def _run(self) -> None:
        while True:
            kick = self._signals_arrived()  # wake the main thread: its handler must run
            step = _state.step
            running = _state.guard is not None and step != self._kicked_step
            if running and _overdue(time.monotonic()):
                self._kicked_step = step
                kick = True
            if kick:
                signal.pthread_kill(self._main, KICK_SIGNAL)


def watch() -> None:
    """Start the watchdog (on the main thread; elsewhere, or when running, a no-op)."""
    if _state.watchdog is None and threading.current_thread() is threading.main_thread():
        _state.watchdog = _Watchdog()


def request_stop(grace: float) -> None:
    """From now on, a guarded step running ``grace`` seconds from now is interrupted
    (called by a stop signal's handler, on the main thread)."""
    _state.stop_at = time.monotonic() + grace
    watch()


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
        if timeout is not None:
            watch()

    def call(self, fn: Callable, *args):
        """``fn(*args)``, interrupted as the module doc says."""
        if _state.guard is not None or threading.get_ident() != threading.main_thread().ident:
            return fn(*args)  # another thread, or nested in a guarded step
        stop_at = _state.stop_at
        if stop_at is not None and time.monotonic() >= stop_at:
            raise StepInterrupted(f"{self.what}: a stop signal came; this step was not started")
        _state.step += 1
        if self.timeout is not None:
            _state.timeout_at = time.monotonic() + self.timeout
        _state.guard = self
        try:
            return fn(*args)
        finally:
            _state.guard = None
            _state.timeout_at = None
