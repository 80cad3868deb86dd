"""Data-parallel learner processes for ``alf.bin.train`` (see ``alf.parallel.collectives``).

``python -m alf.bin.train --num_processes K ...`` starts K learner ranks on this machine
(``alf.bin.train`` with the same arguments, without ``--num_processes``) and watches
them, as torchrun would, but with every socket on loopback: the process-group store
listens on a socket this launcher binds to 127.0.0.1 and hands to rank 0, and gloo
uses the loopback interface. SIGTERM / SIGINT are passed on to every rank (they stop
after the same iteration and rank 0 writes the checkpoint). When a rank exits with an
error or is killed, the others are stopped (SIGTERM, then SIGKILL after
``_STOP_GRACE`` seconds) and the launcher exits non-zero, naming the rank.

Started by torchrun instead (``torchrun --nproc_per_node K -m alf.bin.train ...``, on
one or several machines), each process finds ``RANK``/``WORLD_SIZE``/``MASTER_ADDR``
in its environment and joins torchrun's group; torchrun's own stores listen where its
rendezvous options say.

Rank 0 alone locks ``root_dir`` and writes the run's record, ``alf_config.py``,
summaries and checkpoints.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from alf.parallel import collectives
from alf.trainers import data_parallel

#: the error of a collective whose peer died or hung past the timeout (one line)
PEER_ERRORS = (collectives.PeerFailure,)


def rank_from_env() -> int:
    return int(os.environ.get("RANK", "0"))


def is_main() -> bool:
    """Rank 0, or the only process (from torchrun's environment)."""
    return rank_from_env() == 0


def _without_num_processes(argv: list[str]) -> list[str]:
    result, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--num_processes", "-num_processes"):
            skip = True
        elif not arg.lstrip("-").startswith("num_processes="):
            result.append(arg)
    return result


def start(num_processes: int, argv: list[str]) -> int:
    """Run ``alf.bin.train argv`` on ``num_processes`` ranks; return the exit status
    (0 when all ranks succeed; 2 for a bad request)."""
    if num_processes < 1:
        print(
            f"alf.bin.train: error: --num_processes must be >= 1, got {num_processes}",
            file=sys.stderr,
        )
        return 2
    if collectives.launched_by_torchrun():
        print(
            "alf.bin.train: error: --num_processes starts the ranks itself; under torchrun, "
            "give the number of processes to torchrun (--nproc_per_node) only",
            file=sys.stderr,
        )
        return 2
    listener = socket.create_server(("127.0.0.1", 0), backlog=num_processes * 4)
    port = listener.getsockname()[1]
    command = [sys.executable, "-m", "alf.bin.train", *_without_num_processes(argv)]
    ranks = []
    try:
        for rank in range(num_processes):
            env = _rank_env(rank, num_processes, port)
            env["ALF_STORE_LISTEN_FD"] = str(listener.fileno())  # served by rank 0
            fds = (listener.fileno(),) if rank == 0 else ()
            # own process group: a Ctrl-C reaches the ranks once, through this launcher
            ranks.append(
                subprocess.Popen(
                    command,
                    env=env,
                    pass_fds=fds,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
            )
        listener.close()
        return _watch(ranks)
    finally:
        listener.close()
        _stop(ranks)


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the launcher dies (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _rank_env(rank: int, world: int, port: int) -> dict:
    env = dict(os.environ)
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_WORLD_SIZE=str(world),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        GLOO_SOCKET_IFNAME=env.get("GLOO_SOCKET_IFNAME", "lo"),
    )
    return env


_STOP_GRACE = 30.0
_POLL = 0.2


def _watch(ranks: list[subprocess.Popen]) -> int:
    """Wait for the ranks, passing stop signals on; stop all when one fails."""
    received = []

    def forward(signum, frame):
        del frame
        received.append(signum)
        for proc in ranks:
            if proc.poll() is None:
                proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while True:
            codes = [proc.poll() for proc in ranks]
            failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                rank, code = failed[0]
                if not received:
                    print(
                        f"alf.bin.train: learner rank {rank} exited with status {code}; "
                        f"stopping the other ranks",
                        file=sys.stderr,
                    )
                _stop(ranks)
                return code if code > 0 else 128 - code
            if all(code == 0 for code in codes):
                return 0
            time.sleep(_POLL)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop(ranks: list[subprocess.Popen]) -> None:
    """SIGTERM the ranks still running, then SIGKILL those left after ``_STOP_GRACE``."""
    for proc in ranks:
        if proc.poll() is None:
            proc.terminate()
            proc.send_signal(signal.SIGCONT)  # a stopped rank must run to see the SIGTERM
    deadline = time.monotonic() + _STOP_GRACE
    for proc in ranks:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def finish() -> None:
    """Leave the process group (if any)."""
    collectives.destroy_process_group()


def record_details(seed: int) -> dict:
    """What the run record says about the ranks (nothing for a single process)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return {}
    return {
        "learner_processes": world,
        "rank_seeds": [data_parallel.rank_seed(seed, r) for r in range(world)],
    }
