"""The parent/worker protocol of ``ProcessEnvironment``: framed messages, errors and
shared memory blocks (the worker is ``process_worker``, the parent ``process_environment``).

Protocol. Every message is framed as a 4-byte big-endian length, one byte of
``MessageType`` and a payload (``write_message``/``read_message``):

==========  ===============  ===================================================
message     direction        payload
==========  ===============  ===================================================
READY       worker → parent  pickled dict of specs (after the env is built)
RESET       parent → worker  none
STEP        parent → worker  none (shared memory) or the pickled action leaves
DONE        worker → parent  none: the time step is in shared memory
RESULT      worker → parent  pickled value (time step leaves, call result)
EXCEPTION   worker → parent  pickled dict: type, message, traceback, env_id
CALL        parent → worker  pickled ``(name, args, kwargs)``: ``env.name(...)``
GETATTR     parent → worker  pickled name: ``env.name``
ATTACH      parent → worker  pickled buffer layouts and rows; two fds follow
CLOSE       parent → worker  none: close the env and exit
==========  ===============  ===================================================

Data path. With ``flatten=True`` actions and time steps travel through two shared
memory blocks (memfd, passed to the worker as file descriptors) laid out by
``NestLayout``: one byte block per batch with each leaf ``[B, ...]`` contiguous, so the
pipe only carries payload-free STEP/DONE messages and the parent copies each leaf of a
whole batch out at once. ``ParallelAlfEnvironment`` gives all its workers rows of the
same blocks. With ``flatten=False`` the leaves are pickled over the pipe.
"""

from __future__ import annotations

import contextlib
import enum
import mmap
import os
import signal
import struct
import tempfile

import numpy as np

from alf.environments.batched_environment import NestLayout


class MessageType(enum.IntEnum):
    """The first byte of every message between a parent and its worker."""

    READY = 1
    RESET = 2
    STEP = 3
    DONE = 4
    RESULT = 5
    EXCEPTION = 6
    CALL = 7
    GETATTR = 8
    ATTACH = 9
    CLOSE = 10


_HEADER = struct.Struct("!IB")  # length of kind + payload, kind


def write_message(fd: int, kind: MessageType, payload: bytes = b"") -> None:
    """Write one framed message (``[length][kind][payload]``) to the socket ``fd``."""
    view = memoryview(_HEADER.pack(len(payload) + 1, kind) + payload)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, size: int) -> bytes:
    data = os.read(fd, size)
    if len(data) == size:
        return data
    chunks = [data]
    size -= len(data)
    while data and size:
        data = os.read(fd, size)
        chunks.append(data)
        size -= len(data)
    if size:
        raise EOFError("the other end of the pipe is closed")
    return b"".join(chunks)


def read_message(fd: int) -> tuple[int, bytes]:
    """Read one framed message from ``fd``; ``EOFError`` when the peer is gone."""
    length, kind = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    return kind, (_read_exact(fd, length - 1) if length > 1 else b"")


class EnvironmentProcessError(RuntimeError):
    """An environment worker failed: it raised, died or did not answer in time.

    Attributes:
        env_id: the env_id (or ids) of the environment(s) in the worker.
        exitcode: the worker's exit code if it died (negative: killed by a signal).
        remote_traceback: the worker's traceback text if it raised.
    """

    def __init__(self, message: str, env_id=None, exitcode=None, remote_traceback=None):
        super().__init__(message)
        self.env_id = env_id
        self.exitcode = exitcode
        self.remote_traceback = remote_traceback


class EnvironmentProcessCrashed(EnvironmentProcessError):
    """The worker process died (its ``exitcode`` says how)."""


def describe_exitcode(exitcode) -> str:
    """``'exit code -9 (SIGKILL)'`` style text."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"exit code {exitcode} ({signal.Signals(-exitcode).name})"
        except ValueError:
            pass
    return f"exit code {exitcode}"


def format_env_id(env_id) -> str:
    """``env_id=3`` or ``env_ids=0..3`` (a ``range`` of a batched member), for messages."""
    if isinstance(env_id, range):
        if len(env_id) == 1:
            return f"env_id={env_id.start}"
        return f"env_ids={env_id.start}..{env_id.stop - 1}"
    return f"env_id={env_id}"


class SharedBuffer:
    """An anonymous shared byte block (memfd, or an unlinked temp file) passed by fd.

    Args:
        layout: the ``NestLayout`` of the data it holds; ``views`` lists one
            ``[B, ...]`` array per leaf.
    """

    def __init__(self, layout: NestLayout):
        self.layout = layout
        self.nbytes = layout.nbytes
        if hasattr(os, "memfd_create"):
            self.fd = os.memfd_create("alf_env", os.MFD_CLOEXEC)
        else:
            shm_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
            self.fd, path = tempfile.mkstemp(dir=shm_dir)
            os.unlink(path)
        os.ftruncate(self.fd, self.nbytes)
        self.mmap = mmap.mmap(self.fd, self.nbytes)
        self.array = np.frombuffer(self.mmap, np.uint8)
        self.views = layout.views(self.array)

    def close(self) -> None:
        """Release the mapping and the fd (idempotent)."""
        if self.fd is None:
            return
        self.array = self.views = None
        # BufferError: arrays viewing it are still alive; the mapping goes with them.
        with contextlib.suppress(BufferError):
            self.mmap.close()
        os.close(self.fd)
        self.fd = None
