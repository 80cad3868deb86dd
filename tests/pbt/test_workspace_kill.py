"""A member SIGKILLed while it writes the workspace never leaves a file the others accept
half-written.

A real subprocess publishes member 0 in a tight loop (``Workspace.publish`` of an 8 MB
state, about 50 ms a publish, a third to a half of it writing files); the test process
reads the population while it runs, kills it with SIGKILL at seeded random moments (every
other kill waits until a temporary file shows a write in progress; kills go on until two
of them landed inside a write), reads again, and starts
it anew (it goes on from its newest description). Every read gives either a complete entry
whose checkpoint matches its sha256 and holds exactly the state that description
announces, never older than an entry read before, or nothing with a log line naming the
member. Temporary files a killed writer leaves are gone once a later publish has finished.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import subprocess
import sys
import time

import torch

from alf.pbt.workspace import Workspace
from tests.pbt.conftest import REPO

SIZE = 1 << 21  # float32 values: an 8 MB state
KILLS = 6  # every other one waits until the writer is writing a file
MID_WRITE_HITS = 2  # kills that must land inside a write (more kills are made until they do)
MAX_KILLS = 24  # bounds the extra kills: a write that is never caught is a failure
GIVE_UP = 120.0  # seconds without a new entry: the writer is stuck

WRITER = f"""
import sys
import torch
from alf.pbt.workspace import Workspace

ws = Workspace(sys.argv[1], keep_checkpoints=2)
entry = ws.newest_entry(0, verify=False)
k = entry.iteration if entry is not None else 0
print("ready", k, flush=True)
while True:
    k += 1
    state = {{"w": torch.full(({SIZE},), float(k))}}
    ws.publish(0, 100 * k, k, float(k), {{"Adam.lr": 1e-3 * k}}, state)
"""


def _temp_files(ws: Workspace) -> set[str]:
    directory = ws.pbt_dir(0)
    if not os.path.isdir(directory):
        return set()
    return {name for name in os.listdir(directory) if name.startswith(".tmp-")}


class Reader:
    """Reads member 0 like a peer and checks what it is given."""

    def __init__(self, ws: Workspace, caplog):
        self.ws = ws
        self.caplog = caplog
        self.newest = 0  # the newest iteration read so far
        self.complete = 0
        self.skipped = 0

    def read(self) -> int | None:
        """One read: the entry's iteration, or None when the member was skipped."""
        self.caplog.clear()
        entries = self.ws.population()
        if not entries:
            if self.newest > 0 or self.caplog.records:  # else: nothing was published yet
                self._skipped("member.json")
            return None
        (entry,) = entries
        state = self.ws.load_checkpoint(entry)
        if state is None:  # pruned by the writer between the description and the load
            self._skipped(entry.checkpoint)
            return None
        k = entry.iteration
        assert k >= self.newest, (k, self.newest)  # never an older entry than one read before
        assert (entry.env_steps, entry.objective, entry.checkpoint) == (
            100 * k,
            float(k),
            f"ckpt-{100 * k}.pt",
        )
        assert entry.hyperparameters == {"Adam.lr": 1e-3 * k}
        assert state.keys() == {"w"} and state["w"].shape == (SIZE,)
        assert torch.equal(state["w"], torch.full((SIZE,), float(k)))
        self.newest = k
        self.complete += 1
        return k

    def _skipped(self, name: str) -> None:
        lines = [r.getMessage() for r in self.caplog.records if r.levelno == logging.WARNING]
        assert any(line.startswith("PBT workspace: skipping member 000: ") for line in lines), lines
        assert any(name in line for line in lines), (name, lines)
        self.skipped += 1


def _start(workspace: str) -> tuple[subprocess.Popen, int]:
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env["OMP_NUM_THREADS"] = "1"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, workspace],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    word, k = writer.stdout.readline().split()
    assert word == "ready"
    return writer, int(k)


def _run_then_kill(writer: subprocess.Popen, ws: Workspace, reader: Reader, rng, mid_write: bool):
    """Read while ``writer`` publishes, then SIGKILL it: after a random time, or (``mid_write``)
    after a random time once a temporary file shows it is writing, plus 0-4 ms. The random
    time is at least long enough to read one entry newer than before (on a loaded machine a
    publish can take seconds; ``GIVE_UP`` only bounds a hang)."""
    start = time.monotonic()
    deadline = start + rng.uniform(0.1, 0.5)
    seen = reader.newest
    while time.monotonic() < deadline or reader.newest <= seen:
        assert time.monotonic() < start + GIVE_UP, "the writer published nothing new"
        reader.read()
    if mid_write:
        give_up = time.monotonic() + 5.0
        while not _temp_files(ws) and time.monotonic() < give_up:
            time.sleep(0.0005)
        time.sleep(rng.uniform(0.0, 0.004))
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=10)


def test_a_writer_killed_at_random_moments_never_leaves_a_half_written_entry(tmp_path, caplog):
    rng = random.Random(20240607)
    ws = Workspace(str(tmp_path), keep_checkpoints=2)
    member_json = os.path.join(ws.pbt_dir(0), "member.json")
    reader = Reader(ws, caplog)
    leftovers = []  # (newest iteration at a kill, the temporary files it left)
    writer = None
    kill = 0
    try:
        while kill < KILLS or sum(bool(names) for _, names in leftovers) < MID_WRITE_HITS:
            assert kill < MAX_KILLS, f"{MAX_KILLS} kills, none caught the writer mid-write twice"
            writer, resumed_at = _start(str(tmp_path))
            assert resumed_at == reader.newest  # it goes on from its newest complete entry
            _run_then_kill(writer, ws, reader, rng, mid_write=kill % 2 == 1)
            temp = _temp_files(ws)
            after = reader.read()  # after the kill: the newest complete entry
            assert after is not None or not os.path.exists(member_json)
            for at, names in leftovers:  # publish at+1 finished (with its clean-up) before at+2
                if reader.newest >= at + 2:
                    assert not names & temp, (at, names & temp)
            leftovers.append((reader.newest, temp))
            kill += 1
    finally:
        if writer is not None and writer.poll() is None:
            writer.kill()
            writer.wait()
    left = [names for _, names in leftovers]
    assert sum(bool(names) for names in left) >= 2  # kills inside a write did happen
    assert reader.complete >= KILLS and reader.newest >= KILLS
    # the next publish (here, in this process) removes every temporary file left
    k = reader.newest + 1
    state = {"w": torch.full((SIZE,), float(k))}
    ws.publish(0, 100 * k, k, float(k), {"Adam.lr": 1e-3 * k}, state)
    assert _temp_files(ws) == set()
    assert reader.read() == k
    assert ws.checkpoint_steps(0) == [100 * (k - 1), 100 * k]
    steps = [entry.env_steps for entry in ws.history(0)]  # whole lines, in order
    assert steps == sorted(set(steps)) and steps[-1] == 100 * k
