"""``benchmarks/harness/interleave.py``: processes take turns, and running times are what ran."""

import os
import sys
import time

import pytest

from benchmarks.harness.interleave import Turns, run_in_turns

# Busy for CPU_S seconds of its own CPU time, writing the wall-clock time every millisecond.
_BUSY = """
import sys, time
cpu_s, out = float(sys.argv[1]), sys.argv[2]
stamps, next_stamp, start = [], 0.0, time.process_time()
while time.process_time() - start < cpu_s:
    now = time.time()
    if now >= next_stamp:
        stamps.append(now)
        next_stamp = now + 1e-3
open(out, "w").write("\\n".join(map(repr, stamps)))
"""


def _stamps(path):
    with open(path) as f:
        return [float(line) for line in f]


def test_processes_take_turns_and_running_time_is_what_ran(tmp_path):
    cpu_s, turn_s = 0.6, 0.15
    outs = [str(tmp_path / f"stamps{i}") for i in range(2)]
    commands = [[sys.executable, "-c", _BUSY, str(cpu_s), out] for out in outs]
    logs = [str(tmp_path / f"log{i}") for i in range(2)]
    start = time.time()
    turns = run_in_turns(commands, logs, turn_s)
    elapsed = time.time() - start
    assert [t.returncode for t in turns] == [0, 0]
    for turn, out in zip(turns, outs):
        stamps = _stamps(out)
        # Never ran while recorded as stopped (10 ms for a signal to land).
        inside = [s for s in stamps for a, b in turn.stops if a + 0.01 < s < b - 0.01]
        assert inside == []
        assert len(turn.stops) >= 2  # it was stopped and resumed, more than once
        # Its own CPU time: the busy loop plus interpreter start-up (a generous bound: on a
        # busy machine start-up takes longer).
        assert cpu_s <= turn.cpu_s < cpu_s + 1.0
        # Its running time holds its work: a process cannot use more CPU time than it ran.
        # (On an idle machine the two are equal; other jobs make running time longer, so
        # there is no upper bound here but the hang bound.)
        assert turn.cpu_s - 0.01 <= turn.wall_s < 60.0
        busy = turn.running_s(stamps[0], stamps[-1])
        assert cpu_s - 0.01 <= busy <= turn.wall_s
    # One at a time: the running times never overlap, so they add up to at most the elapsed
    # time (less only by the moments between one's stop and the other's start).
    assert sum(t.wall_s for t in turns) <= elapsed + 0.01


def test_exit_codes_and_bad_turn():
    turns = run_in_turns(
        [[sys.executable, "-c", "import sys; sys.exit(3)"], [sys.executable, "-c", "pass"]],
        [os.devnull, os.devnull],
        turn_s=0.1,
    )
    assert [t.returncode for t in turns] == [3, 0]
    with pytest.raises(ValueError, match="turn_s"):
        run_in_turns([], [], turn_s=0)


def test_running_s_removes_stopped_periods():
    turns = Turns(start=0.0, stops=[[1.0, 3.0], [5.0, 6.0]], end=10.0)
    assert turns.wall_s == 7.0
    assert turns.running_s(2.0, 5.5) == 2.0  # ran 3..5
    assert turns.running_s(0.0, 1.0) == 1.0
    assert Turns(start=0.0, stops=[[4.0, None]]).running_s(0.0, 6.0) == 4.0
