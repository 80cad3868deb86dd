"""Run benchmark subprocesses in turns on one core, so they meet the same machine; and their
peak memory.

This machine's core speed drifts by tens of percent within minutes, so ``run_in_turns`` starts
every command at once but runs one at a time: every ``turn_s`` seconds the running one is
stopped (``SIGSTOP``) and the next resumed (``SIGCONT``), so a slow spell falls on all.
``Turns.running_s(t0, t1)`` removes the stopped periods from wall-clock times; CPU time comes
from ``os.wait4``. Memory is the resident set of a process and all its descendants, sampled
from ``/proc`` while it runs (``ru_maxrss`` cannot serve: a child forked from a large parent
starts its count at the parent's size).
"""

from __future__ import annotations

import dataclasses
import glob
import os
import signal
import subprocess
import time


@dataclasses.dataclass
class Turns:
    """When one process ran: its start and end (wall clock) and the periods it was stopped."""

    start: float
    stops: list[list[float]] = dataclasses.field(default_factory=list)  # [[stopped, resumed]]
    end: float | None = None
    cpu_s: float | None = None
    returncode: int | None = None
    peak_rss_mb: float | None = None  # the process tree's largest resident set, MB (``peak_mb``)

    def running_s(self, t0: float, t1: float) -> float:
        """Seconds the process ran between wall-clock times ``t0`` and ``t1``."""
        stops = ((a, t1 if b is None else b) for a, b in self.stops)
        return (t1 - t0) - sum(max(0.0, min(t1, b) - max(t0, a)) for a, b in stops)

    @property
    def wall_s(self) -> float:
        """The process's running time from start to exit."""
        return self.running_s(self.start, self.end)


def run_in_turns(commands, log_paths, turn_s: float, cwd=None, env=None, poll_s=0.05):
    """Run ``commands`` taking turns of ``turn_s`` seconds (infinite: one after the other),
    output to ``log_paths``; one ``Turns`` per command once all exited (the caller checks
    ``returncode``). On an exception (Ctrl-C included) every process still alive is killed."""
    if turn_s <= 0:
        raise ValueError(f"turn_s must be > 0, got {turn_s}")
    procs, turns = [], []
    try:
        for cmd, log_path in zip(commands, log_paths, strict=True):
            with open(log_path, "w") as log:
                turns.append(Turns(start=time.time()))
                procs.append(subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=log))
            _stop(procs[-1], turns[-1])
        live = list(range(len(procs)))
        while live:
            for i in list(live):
                _resume(procs[i], turns[i])
                deadline = time.time() + turn_s
                while time.time() < deadline and not _reaped(procs[i], turns[i]):
                    time.sleep(poll_s)
                if turns[i].end is not None:
                    live.remove(i)
                elif len(live) > 1:
                    _stop(procs[i], turns[i])
    finally:
        for proc, turn in zip(procs, turns):
            if turn.end is None:
                proc.kill()
                os.kill(proc.pid, signal.SIGCONT)
                proc.wait()
    return turns


def _stop(proc: subprocess.Popen, turn: Turns) -> None:
    os.kill(proc.pid, signal.SIGSTOP)
    turn.stops.append([time.time(), None])


def _resume(proc: subprocess.Popen, turn: Turns) -> None:
    if turn.stops and turn.stops[-1][1] is None:
        turn.stops[-1][1] = time.time()
        os.kill(proc.pid, signal.SIGCONT)


def _reaped(proc: subprocess.Popen, turn: Turns) -> bool:
    """Whether the process has exited; if so, record its end, CPU time and exit code."""
    turn.peak_rss_mb = peak_mb(turn.peak_rss_mb, proc.pid)
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid == 0:
        return False
    turn.end = time.time()
    turn.cpu_s = usage.ru_utime + usage.ru_stime
    turn.returncode = proc.returncode = os.waitstatus_to_exitcode(status)
    return True


def tree_rss_mb(pid: int) -> float:
    """The resident set of ``pid`` and all its descendants now, in MB (0 if it is gone)."""
    total_kb, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            with open(f"/proc/{current}/status") as f:
                total_kb += next((int(x.split()[1]) for x in f if x.startswith("VmRSS:")), 0)
            for path in glob.glob(f"/proc/{current}/task/*/children"):
                with open(path) as f:
                    pending += [int(child) for child in f.read().split()]
        except OSError:
            continue  # gone meanwhile (a zombie has no VmRSS: 0)
    return total_kb / 1024


def peak_mb(peak: float | None, pid: int) -> float | None:
    """The larger of ``peak`` (None: nothing sampled yet) and ``tree_rss_mb(pid)`` now."""
    rss = tree_rss_mb(pid)
    return rss if rss and (peak is None or rss > peak) else peak
