"""Resident memory of a process tree, sampled from ``/proc`` (Linux).

``ru_maxrss`` from ``wait4`` cannot serve: a child forked from a large parent starts its
count at the parent's size (the high-water mark survives ``exec``), so every benchmark run
started from a harness that imported torch would read at least the harness's size. The
runners instead sample the resident set of the process and all its descendants (env
subprocesses included) while it runs, and keep the largest sum.
"""

from __future__ import annotations

import os


def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    children = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                children += [int(c) for c in f.read().split()]
        except OSError:
            continue
    return children


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0  # gone, or a zombie (no memory left)


def tree_rss_mb(pid: int) -> float:
    """The resident set of ``pid`` and all its descendants now, in MB (0 if it is gone)."""
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        total += _rss_kb(current)
        pending += _children(current)
    return total / 1024


def peak_mb(peak: float | None, pid: int) -> float | None:
    """The larger of ``peak`` (None: nothing sampled yet) and ``tree_rss_mb(pid)`` now."""
    rss = tree_rss_mb(pid)
    return rss if rss and (peak is None or rss > peak) else peak
