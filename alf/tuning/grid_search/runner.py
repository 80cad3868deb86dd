"""The grid search's training subprocesses.

``Runner`` starts each run's command in its own subprocess, at most ``max_workers`` at a
time, sends its output to ``root_dir/logs/<name>.log`` (appended, one header line per
attempt) and records its start, end and exit status through a callback. A run that fails
does not stop the others; the tail of its output goes to its root_dir
(``grid_search_stderr.txt``).

Stopping: SIGTERM or SIGINT to the grid search (Ctrl-C) stops launching runs and forwards
SIGTERM to each running trainer, which finishes its iteration, writes a checkpoint and
exits; a second signal is forwarded again (the trainers then exit at once). Trainers still
running ``stop_timeout`` seconds after the first signal are killed with their process
group. The children run in their own sessions, so a Ctrl-C in the terminal reaches them
only through the grid search; on Linux they also get SIGTERM if the grid search dies
(``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import dataclasses
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from alf.tuning.grid_search import record as rec

_PR_SET_PDEATHSIG = 1
_POLL_SECONDS = 0.1


class StopSignals:
    """Counts SIGTERM / SIGINT (a context manager; signals ignored on entry stay ignored)."""

    def __init__(self):
        self.count = 0
        self._previous = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        self.count += 1
        name = signal.Signals(signum).name
        if self.count == 1:
            what = "stopping: SIGTERM to the running trainers (they checkpoint and exit)"
        else:
            what = "SIGTERM again to the running trainers (they exit at once)"
        os.write(2, f"alf.bin.grid_search: {name}: {what}\n".encode())

    def __exit__(self, *exc) -> bool:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        return False


def _prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _child_setup(prctl, parent_pid: int) -> None:
    """In the child before exec: default signal handling; SIGTERM when the parent dies."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl
            os._exit(1)


@dataclasses.dataclass
class _Child:
    entry: dict
    proc: subprocess.Popen
    log_file: object
    log_path: str
    offset: int
    stopped: bool = False
    killed: bool = False


class Runner:
    """Runs the record entries ``todo`` (see the module doc).

    Args:
        root_dir: the grid search's directory; run ``name`` trains in ``root_dir/name``.
        todo: record entries (with ``name`` and ``command``), in launch order; they are
            updated in place.
        max_workers: most runs at once.
        stop_timeout: seconds to wait for the trainers after a stop signal before killing.
        save: called after every change to an entry (writes the record).
        env: the children's environment.
    """

    def __init__(
        self,
        root_dir: str,
        todo: list[dict],
        max_workers: int,
        stop_timeout: float,
        save: Callable[[], None],
        env: dict | None = None,
    ):
        self._root_dir = root_dir
        self._pending = collections.deque(todo)
        self._max_workers = max_workers
        self._stop_timeout = stop_timeout
        self._save = save
        self._env = env
        self._running: list[_Child] = []
        self._prctl = _prctl()
        self.stopped = False

    def run(self) -> bool:
        """Run everything, or until a stop signal; return whether a signal stopped it."""
        with StopSignals() as signals:
            forwarded, deadline = 0, None
            while self._pending or self._running:
                if signals.count > forwarded:
                    forwarded = signals.count
                    self._forward_stop()
                    deadline = deadline or time.monotonic() + self._stop_timeout
                while not forwarded and self._pending and len(self._running) < self._max_workers:
                    self._start(self._pending.popleft())
                self._reap()
                if forwarded and not self._running:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    self._kill_all()
                    deadline = float("inf")
                time.sleep(_POLL_SECONDS)
        self.stopped = forwarded > 0
        return self.stopped

    def _start(self, entry: dict) -> None:
        log_dir = os.path.join(self._root_dir, rec.LOG_DIR)
        os.makedirs(log_dir, exist_ok=True)
        log_path = os.path.join(log_dir, entry["name"] + ".log")
        log_file = open(log_path, "ab")  # noqa: SIM115 (closed when the child ends)
        header = f"# {rec.now()} alf.bin.grid_search: {shlex.join(entry['command'])}\n"
        log_file.write(header.encode())
        log_file.flush()
        offset = log_file.tell()
        parent = os.getpid()
        proc = subprocess.Popen(
            entry["command"],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=self._env,
            start_new_session=True,
            preexec_fn=lambda: _child_setup(self._prctl, parent),
        )
        entry.update(
            status=rec.RUNNING, exit_code=None, start_time=rec.now(), end_time=None, pid=proc.pid
        )
        for key in ("objective", "objective_source"):
            entry.pop(key, None)
        self._running.append(_Child(entry, proc, log_file, log_path, offset))
        logging.info("Started %s (pid %d)", entry["name"], proc.pid)
        self._save()

    def _reap(self) -> None:
        for child in list(self._running):
            code = child.proc.poll()
            if code is not None:
                self._running.remove(child)
                self._finish(child, code)

    def _finish(self, child: _Child, code: int) -> None:
        child.log_file.close()
        entry = child.entry
        run_dir = os.path.join(self._root_dir, entry["name"])
        tail = os.path.join(run_dir, rec.STDERR_TAIL_FILE)
        if child.stopped or child.killed:
            status = rec.INTERRUPTED
        elif code == 0:
            status = rec.FINISHED
            if os.path.exists(tail):
                os.remove(tail)  # from an earlier, failed attempt
        else:
            status = rec.FAILED
            tail = rec.save_output_tail(child.log_path, child.offset, run_dir)
        entry.update(status=status, exit_code=code, end_time=rec.now())
        if status == rec.FAILED:
            logging.error(
                "%s failed with exit status %d; its output ends in %s", entry["name"], code, tail
            )
        else:
            logging.info("%s %s (exit status %d)", entry["name"], status, code)
        self._save()

    def _forward_stop(self) -> None:
        for child in self._running:
            child.stopped = True
            with contextlib.suppress(ProcessLookupError):
                child.proc.send_signal(signal.SIGTERM)

    def _kill_all(self) -> None:
        for child in self._running:
            logging.warning(
                "%s did not stop within %gs: killed", child.entry["name"], self._stop_timeout
            )
            child.killed = True
            try:
                os.killpg(child.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                child.proc.kill()
