"""One trainer per root_dir: an OS lock on ``root_dir/.lock`` held while training.

Two trainers writing into one root_dir would interleave checkpoints, event files and
records. ``RootDirLock`` takes an exclusive ``flock`` on ``root_dir/.lock`` (created on
first use and left in place; it holds the pid of the last trainer that locked it). The
kernel releases the lock when the process exits, however it exits, so a trainer that was
SIGKILLed never blocks the next run; a second trainer on a live root_dir gets
``RootDirInUse`` naming the directory and the holder's pid. The file descriptor is not
inherited across ``exec`` (env worker processes started by forkserver or spawn do not
hold the lock).

Readers (``alf.bin.play``, tensorboard) do not lock.
"""

from __future__ import annotations

import fcntl
import os

LOCK_FILE = ".lock"


class RootDirInUse(RuntimeError):
    """Another live process holds the root_dir's lock."""


class RootDirLock:
    """An exclusive lock on ``root_dir`` (a context manager; see the module doc).

    Args:
        root_dir: the run's directory; it must exist when the lock is acquired.
    """

    def __init__(self, root_dir: str):
        self.root_dir = root_dir
        self.path = os.path.join(root_dir, LOCK_FILE)
        self._fd = None

    def acquire(self) -> None:
        """Take the lock without waiting; write this process's pid into the lock file.

        Raises:
            RootDirInUse: another process holds it (the message names it and its pid).
        """
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise RootDirInUse(
                f"root_dir {self.root_dir} is in use by another trainer (pid {holder}); "
                f"wait for it to finish or stop it (SIGTERM saves a checkpoint) first"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        """Give the lock up (idempotent); the file stays."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> RootDirLock:
        """Acquire the lock unless this object holds it already; released on exit."""
        if not self.held:
            self.acquire()
        return self

    def __exit__(self, *exc) -> bool:
        self.release()
        return False


def _read_pid(fd: int) -> str:
    """The pid written in the lock file ('unknown' while its holder has not written it yet)."""
    text = os.pread(fd, 64, 0).decode(errors="replace").strip()
    return text if text.isdigit() else "unknown"
