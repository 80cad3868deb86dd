"""Running the members of a PBT population: ``Launcher`` (used by ``alf.bin.pbt_launch``).

Each member is one ``python -m alf.bin.train`` command (``member_command``), started by a
backend: ``ProcessBackend`` (local subprocesses, each in its own session, output appended
to ``WORKSPACE/logs/NNN.log``; with GPUs, each member sees one, round-robin over the
devices visible to the launcher, or one per learner rank) or ``SlurmBackend`` (one
submitit job per run; needs ``submitit``). A member may itself be ``K`` data-parallel
learner ranks (``num_processes``: ``alf.bin.train --num_processes K``, which starts and
watches them; rank 0 decides for the member, ``alf.pbt.member``).

At most ``max_parallel`` members run at once. When that is fewer than the population,
the members run in turns: each is started with ``PBTConfig.stop_after_check=True``, so it
trains to its next PBT check, writes a checkpoint, leaves ``pbt/yielded`` and exits 0;
it then waits at the back of the queue and resumes from its checkpoint on its next turn.

A member that exits with another non-zero status (a crash, a SIGKILL) is started again at
once, and resumes from its newest checkpoint, at most ``max_restarts`` times; status 2
(bad input, found before anything was written) is not retried. A member that exits 0
has finished when it left ``pbt/finished`` (its training ended), else it was stopped by
a signal from elsewhere (``interrupted``, not restarted).

SIGTERM / SIGINT stop launching and forward SIGTERM to the running members (each finishes
its iteration, writes a checkpoint and exits); a second signal forwards it again; members
still running ``stop_timeout`` seconds after the first are killed. The same command again
resumes the population: finished members are skipped, the others resume.

``WORKSPACE/pbt_launch.json`` records the launch and each member's status (pending,
running, waiting, finished, failed, interrupted), attempts, restarts, exit status and
times; it is rewritten atomically on every change.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
import json
import logging
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from alf.pbt.files import atomic_write
from alf.pbt.member import FINISHED_FILE, YIELDED_FILE
from alf.pbt.workspace import PBT_DIR
from alf.tuning.grid_search.runner import StopSignals, _child_setup, _prctl

RECORD_FILE = "pbt_launch.json"
LOG_DIR = "logs"
PENDING, RUNNING, WAITING = "pending", "running", "waiting"
FINISHED, FAILED, INTERRUPTED = "finished", "failed", "interrupted"
SETUP_ERROR_STATUS = 2
_POLL_SECONDS = 0.1


def now() -> str:
    """UTC now, ISO 8601 (seconds)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def member_dir(workspace: str, policy_idx: int) -> str:
    """``WORKSPACE/NNN``: the member's root_dir (and its workspace folder)."""
    return os.path.join(workspace, f"{policy_idx:03d}")


def marker_path(workspace: str, policy_idx: int, name: str) -> str:
    """``WORKSPACE/NNN/pbt/<name>``: ``yielded`` (left when a member stops after a check,
    ``PBTConfig.stop_after_check``) or ``finished`` (left when its training ends)."""
    return os.path.join(member_dir(workspace, policy_idx), PBT_DIR, name)


def member_command(
    conf: str,
    workspace: str,
    policy_idx: int,
    num_policies: int,
    conf_params: list[str],
    in_turns: bool,
    store_snapshot: bool = True,
    num_processes: int = 1,
) -> list[str]:
    """The ``alf.bin.train`` command of member ``policy_idx``.

    The PBT values come first (command-line values are immutable, the first one set wins),
    then ``conf_params`` (the member's own, then the population's). With ``num_processes``
    K > 1 the member trains on K data-parallel learner ranks (``--num_processes K``).
    """
    command = [sys.executable, "-m", "alf.bin.train", "--conf", conf]
    command += ["--root_dir", member_dir(workspace, policy_idx)]
    if num_processes > 1:
        command += ["--num_processes", str(num_processes)]
    params = [
        f"PBTConfig.workspace={workspace!r}",
        f"PBTConfig.policy_idx={policy_idx}",
        f"PBTConfig.num_policies={num_policies}",
        f"PBTConfig.stop_after_check={in_turns}",
        *conf_params,
    ]
    for param in params:
        command += ["--conf_param", param]
    if not store_snapshot:
        command.append("--nostore_snapshot")
    return command


def read_record(workspace: str) -> dict | None:
    """``WORKSPACE/pbt_launch.json`` (None when missing).

    Raises:
        ValueError: it is not a JSON object with a ``members`` list (naming the file).
    """
    path = os.path.join(workspace, RECORD_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} cannot be read: {e}") from None
    if not isinstance(record, dict) or not isinstance(record.get("members"), list):
        raise ValueError(f"{path} is not a PBT launch record")
    return record


def write_record(workspace: str, record: dict) -> None:
    """Rewrite ``WORKSPACE/pbt_launch.json`` atomically."""
    text = json.dumps(record, indent=2) + "\n"
    atomic_write(os.path.join(workspace, RECORD_FILE), text.encode("utf-8"))


# --------------------------------------------------------------------------- backends


class _Process:
    """A member started as a local subprocess."""

    def __init__(self, command, env, log_path, prctl):
        self.log_file = open(log_path, "ab")  # noqa: SIM115 (closed when the member ends)
        self.log_file.write(f"# {now()} alf.bin.pbt_launch: {shlex.join(command)}\n".encode())
        self.log_file.flush()
        parent = os.getpid()
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=lambda: _child_setup(prctl, parent),
        )
        self.pid = self.proc.pid

    def poll(self) -> int | None:
        code = self.proc.poll()
        if code is not None:
            self.log_file.close()
        return code

    def terminate(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            self.proc.kill()


def device_env(env: dict, policy_idx: int, num_gpus: int, num_processes: int = 1) -> dict:
    """``env`` with ``CUDA_VISIBLE_DEVICES`` the devices of member ``policy_idx``: one per
    learner rank (``num_processes``, at most all of them), round-robin over the devices
    ``env`` makes visible (all ``num_gpus`` when it names none); unchanged without GPUs."""
    env = dict(env)
    if num_gpus > 0:
        visible = env.get("CUDA_VISIBLE_DEVICES")
        devices = visible.split(",") if visible else [str(i) for i in range(num_gpus)]
        count = min(max(num_processes, 1), len(devices))
        first = policy_idx * count
        chosen = [devices[(first + j) % len(devices)].strip() for j in range(count)]
        env["CUDA_VISIBLE_DEVICES"] = ",".join(chosen)
    return env


class ProcessBackend:
    """Local subprocesses (see the module doc)."""

    name = "processes"
    poll_seconds = _POLL_SECONDS

    def __init__(self, num_gpus: int = 0, num_processes: int = 1):
        self._num_gpus = num_gpus
        self._num_processes = num_processes
        self._prctl = _prctl()

    def start(self, policy_idx: int, command: list[str], env: dict, log_path: str) -> _Process:
        """Start ``command``; with GPUs, on its devices (``device_env``)."""
        env = device_env(env, policy_idx, self._num_gpus, self._num_processes)
        return _Process(command, env, log_path, self._prctl)


class _SlurmJob:
    """A member run as a submitit job."""

    def __init__(self, job):
        self.job = job
        self.pid = job.job_id

    def poll(self) -> int | None:
        if not self.job.done():
            return None
        try:
            self.job.result()
        except Exception as e:  # submitit raises its own errors for a failed command
            text = str(e)
            return SETUP_ERROR_STATUS if "exit status 2" in text else 1
        return 0

    def terminate(self) -> None:
        if shutil.which("scancel"):
            subprocess.run(["scancel", "--signal=TERM", str(self.job.job_id)], check=False)
        else:  # submitit's local executor (no Slurm here): its cancel interrupts the job
            self.job.cancel(check=False)

    def kill(self) -> None:
        self.job.cancel(check=False)


class SlurmBackend:
    """One submitit job per member run (``pip install alf[slurm]``); the jobs' files go to
    ``WORKSPACE/slurm``."""

    name = "slurm"

    def __init__(self, workspace: str, parameters: dict):
        import submitit  # checked by alf.bin.pbt_launch before

        self._submitit = submitit
        self._executor = submitit.AutoExecutor(folder=os.path.join(workspace, "slurm"))
        self._executor.update_parameters(**parameters)
        # each poll asks Slurm; without Slurm, submitit runs the jobs here (its local executor)
        self.poll_seconds = 15.0 if self._executor.cluster == "slurm" else 0.5

    def start(self, policy_idx: int, command: list[str], env: dict, log_path: str) -> _SlurmJob:
        """Submit ``command`` as a job named after the member."""
        with open(log_path, "ab") as log_file:
            log_file.write(
                f"# {now()} alf.bin.pbt_launch (slurm): {shlex.join(command)}\n".encode()
            )
        self._executor.update_parameters(name=f"alf-pbt-{policy_idx:03d}")
        function = self._submitit.helpers.CommandFunction(command, env=env)
        return _SlurmJob(self._executor.submit(function))


# --------------------------------------------------------------------------- launcher


class _StopSignals(StopSignals):
    """``StopSignals`` saying what the launcher does."""

    def _handle(self, signum, frame) -> None:
        self.count += 1
        if self.count == 1:
            what = "stopping: SIGTERM to the running members (they checkpoint and exit)"
        else:
            what = "SIGTERM again to the running members (they exit at once)"
        name = signal.Signals(signum).name
        os.write(2, f"alf.bin.pbt_launch: {name}: {what}\n".encode())


@dataclasses.dataclass
class _Running:
    entry: dict
    handle: object
    stopped: bool = False
    killed: bool = False


class Launcher:
    """Runs the member entries of a launch record (see the module doc).

    Args:
        workspace: the population's folder.
        entries: the record's member entries (``policy_idx``, ``command``, ``status``);
            updated in place.
        backend: a ``ProcessBackend`` or ``SlurmBackend``.
        max_parallel: most members running at once.
        max_restarts: how many times a crashed member is started again.
        stop_timeout: seconds to wait for the members after a stop signal before killing.
        save: called after every change to an entry (writes the record).
        env: the members' environment.
    """

    def __init__(
        self,
        workspace: str,
        entries: list[dict],
        backend,
        max_parallel: int,
        max_restarts: int,
        stop_timeout: float,
        save: Callable[[], None],
        env: dict,
    ):
        self._workspace = workspace
        self._queue = collections.deque(e for e in entries if e["status"] != FINISHED)
        self._backend = backend
        self._max_parallel = max_parallel
        self._max_restarts = max_restarts
        self._stop_timeout = stop_timeout
        self._save = save
        self._env = env
        self._running: list[_Running] = []
        self.stopped = False

    def run(self) -> bool:
        """Run the members until all finished or failed, or a stop signal; return whether a
        signal stopped them."""
        with _StopSignals() as signals:
            forwarded, deadline, polled = 0, None, -math.inf
            while self._queue or self._running:
                if signals.count > forwarded:
                    forwarded = signals.count
                    self._forward_stop()
                    deadline = deadline or time.monotonic() + self._stop_timeout
                while not forwarded and self._queue and len(self._running) < self._max_parallel:
                    self._start(self._queue.popleft())
                if forwarded or time.monotonic() - polled >= self._backend.poll_seconds:
                    polled = time.monotonic()
                    self._reap()
                if forwarded and not self._running:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    self._kill_all()
                    deadline = float("inf")
                time.sleep(_POLL_SECONDS)
        self._save()
        self.stopped = forwarded > 0
        return self.stopped

    def _start(self, entry: dict) -> None:
        idx = entry["policy_idx"]
        with contextlib.suppress(FileNotFoundError):
            os.remove(marker_path(self._workspace, idx, YIELDED_FILE))
        log_dir = os.path.join(self._workspace, LOG_DIR)
        os.makedirs(log_dir, exist_ok=True)
        log_path = os.path.join(log_dir, f"{idx:03d}.log")
        handle = self._backend.start(idx, entry["command"], self._env, log_path)
        entry.update(
            status=RUNNING,
            attempts=entry.get("attempts", 0) + 1,
            exit_code=None,
            start_time=now(),
            pid=handle.pid,
        )
        self._running.append(_Running(entry, handle))
        logging.info("Started member %03d (%s)", idx, handle.pid)
        self._save()

    def _reap(self) -> None:
        for running in list(self._running):
            code = running.handle.poll()
            if code is not None:
                self._running.remove(running)
                self._finish(running, code)

    def _finish(self, running: _Running, code: int) -> None:
        entry = running.entry
        idx = entry["policy_idx"]
        entry.update(exit_code=code, end_time=now())
        yielded = os.path.exists(marker_path(self._workspace, idx, YIELDED_FILE))
        finished = os.path.exists(marker_path(self._workspace, idx, FINISHED_FILE))
        if running.stopped or running.killed:
            entry["status"] = INTERRUPTED
        elif code == 0 and finished:
            entry["status"] = FINISHED
        elif code == 0 and yielded:
            entry["status"] = WAITING
            self._queue.append(entry)
        elif code == 0:  # stopped by a signal from elsewhere: not restarted
            entry["status"] = INTERRUPTED
        elif code == SETUP_ERROR_STATUS:
            entry["status"] = FAILED
        elif entry.get("restarts", 0) < self._max_restarts:
            entry["restarts"] = entry.get("restarts", 0) + 1
            entry["status"] = PENDING
            self._queue.appendleft(entry)
            logging.warning(
                "Member %03d exited with status %d: restarting it from its checkpoint (%d of %d)",
                idx,
                code,
                entry["restarts"],
                self._max_restarts,
            )
        else:
            entry["status"] = FAILED
        if entry["status"] == FAILED:
            log = os.path.join(self._workspace, LOG_DIR, f"{idx:03d}.log")
            logging.error("Member %03d failed with exit status %d; see %s", idx, code, log)
        elif entry["status"] != PENDING:
            logging.info("Member %03d %s (exit status %d)", idx, entry["status"], code)
        self._save()

    def _forward_stop(self) -> None:
        for running in self._running:
            running.stopped = True
            running.handle.terminate()

    def _kill_all(self) -> None:
        for running in self._running:
            logging.warning(
                "Member %03d did not stop within %gs: killed",
                running.entry["policy_idx"],
                self._stop_timeout,
            )
            running.killed = True
            running.handle.kill()
