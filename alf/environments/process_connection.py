"""The parent's end of one environment worker: its process, its pipe and bounded waits.

The worker is started with the ``forkserver`` start method (``spawn`` where it is not
available): the fork server imports torch and alf once, and every later worker is a
cheap fork of it (~10 ms instead of ~0.8 s of imports per worker with ``spawn``), while
never forking a parent that may already run torch threads.

Every wait polls the pipe in short slices and checks between slices that the worker is
alive, so a dead worker (e.g. SIGKILL) raises ``EnvironmentProcessCrashed`` naming the
env_id and exit code at once, and a hung one raises ``EnvironmentProcessError`` after
the timeout. Worker exceptions are re-raised in the parent with the worker's traceback
text. A finalizer (also run at interpreter exit) asks the worker to exit, then
terminates and kills it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import select
import sys
import time
import weakref
from multiprocessing import reduction

import cloudpickle

from alf.environments.process_protocol import (
    EnvironmentProcessCrashed,
    EnvironmentProcessError,
    MessageType,
    describe_exitcode,
    format_env_id,
    read_message,
    write_message,
)
from alf.environments.process_worker import worker_main

#: Seconds between liveness checks while waiting for a worker.
POLL_INTERVAL = 0.05

_FORKSERVER_PRELOAD = ["alf.environments.process_worker", "alf.environments.suite_gym"]


def get_context(start_method: str | None = None):
    """The multiprocessing context for env workers (forkserver with alf preloaded)."""
    if start_method is None:
        available = multiprocessing.get_all_start_methods()
        start_method = "forkserver" if "forkserver" in available else "spawn"
    context = multiprocessing.get_context(start_method)
    if start_method == "forkserver":
        context.set_forkserver_preload(_FORKSERVER_PRELOAD)
    return context


@contextlib.contextmanager
def _main_module_hidden():
    """Start workers without re-running the parent's ``__main__`` in them.

    ``spawn``/``forkserver`` children import the parent's main script (as
    ``__mp_main__``) so that pickles can refer to its objects; an unguarded script
    would then start workers (or training) again in every worker. The worker needs
    nothing from ``__main__`` (the constructor is cloudpickled by value), so the
    main module's ``__spec__``/``__file__`` are hidden while the worker starts.
    """
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {name: vars(main)[name] for name in ("__spec__", "__file__") if name in vars(main)}
    try:
        main.__spec__ = None
        vars(main).pop("__file__", None)
        yield
    finally:
        vars(main).update(saved)


def _shutdown_worker(process, conn, timeout: float) -> None:
    """Ask the worker to exit; terminate, then kill it if it does not."""
    shutdown_workers([(process, conn)], timeout)


def shutdown_workers(workers: list, grace: float = 5.0) -> None:
    """Stop the ``(process, conn)`` workers together: ask all to exit, give them ``grace``
    seconds in all, then terminate and kill the ones left (a hung worker costs the
    grace once, however many there are)."""
    for process, conn in workers:
        try:
            if process.is_alive():
                write_message(conn.fileno(), MessageType.CLOSE)
        except (OSError, ValueError):
            pass
    for stop in (None, "terminate", "kill"):
        left = [process for process, _ in workers if process.exitcode is None]
        for process in left if stop else ():
            getattr(process, stop)()
        deadline = time.monotonic() + (grace if stop is None else 1.0)
        for process in left:
            process.join(max(0.0, deadline - time.monotonic()))
    for _, conn in workers:
        conn.close()


class WorkerConnection:
    """One started worker process and the parent's end of its pipe.

    One request at a time: ``request`` sends a message that expects one reply (after
    draining the reply to an interrupted request), ``receive`` waits for it with a
    timeout and a liveness check. Once the worker is found dead every later request
    raises the same ``EnvironmentProcessCrashed``; a crashed worker is replaced by a new
    ``WorkerConnection``, not revived.

    Args:
        context: the multiprocessing context (``get_context``).
        env_id: the environment's id, for the process name and error messages (may be
            reassigned later).
        worker_args: the arguments of ``worker_main`` after the pipe: the pickled
            constructor, env_id, torch_num_threads and the exported configs.
        timeout: seconds to wait for the stale reply that ``request`` drains.
    """

    def __init__(self, context, env_id, worker_args: tuple, timeout: float):
        self.env_id = env_id
        self._timeout = timeout
        parent_conn, child_conn = context.Pipe(duplex=True)
        process = context.Process(
            target=worker_main,
            args=(child_conn, *worker_args),
            name=f"alf-env-{format_env_id(env_id)}",
            daemon=True,
        )
        with _main_module_hidden():
            process.start()
        child_conn.close()
        self.process, self._conn = process, parent_conn
        self._fd = parent_conn.fileno()
        self._poller = select.poll()
        self._poller.register(self._fd, select.POLLIN)
        self._finalizer = weakref.finalize(self, _shutdown_worker, process, parent_conn, 5.0)
        self._awaiting_reply = True  # READY
        #: the ``EnvironmentProcessCrashed`` once the worker was found dead.
        self.failure = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def name(self) -> str:
        return f"Environment worker {format_env_id(self.env_id)} (pid {self.pid})"

    def wait_ready(self, timeout: float) -> dict:
        """Wait for the worker to build the env; return its description."""
        self._awaiting_reply = False
        _, payload = self.receive((MessageType.READY,), timeout)
        return pickle.loads(payload)

    def stop(self) -> None:
        """Stop the worker (``shutdown_workers``). Idempotent."""
        self._finalizer()

    def detach(self):
        """``(process, conn)`` of the live worker, handed over to the caller to stop;
        None when it is stopped already."""
        detached = self._finalizer.detach()
        return None if detached is None else detached[2][:2]

    def send_handles(self, *fds: int) -> None:
        """Pass file descriptors to the worker (after an ATTACH request)."""
        for fd in fds:
            reduction.send_handle(self._conn, fd, self.pid)

    def request(self, kind: MessageType, payload: bytes = b"") -> None:
        """Send a request that expects one reply (after draining a stale reply)."""
        if self.failure is not None:
            raise self.failure
        if self._awaiting_reply:
            self._drain()
        try:
            write_message(self._fd, kind, payload)
        except OSError:
            raise self._crash_error() from None
        self._awaiting_reply = True

    def _drain(self) -> None:
        """Discard the reply to a request whose wait was interrupted (e.g. by Ctrl-C)."""
        self._awaiting_reply = False
        try:
            self.receive(tuple(MessageType), self._timeout)
        except EnvironmentProcessCrashed:
            raise
        except EnvironmentProcessError:
            pass

    def receive(self, expected: tuple, timeout: float, said: float | None = None):
        """Wait for the next message, checking that the worker lives, and decode it.

        ``said``: the timeout to name in the error (the whole budget when ``timeout`` is
        what is left of a shared deadline).

        Returns:
            ``(kind, payload)``. An EXCEPTION message is raised as
            ``EnvironmentProcessError``.
        """
        poll, process = self._poller.poll, self.process
        wait_ms = int(POLL_INTERVAL * 1000)
        deadline = time.monotonic() + timeout
        while not poll(wait_ms):
            if not process.is_alive():
                if poll(0):
                    break  # its last message is still in the pipe
                raise self._crash_error()
            if time.monotonic() > deadline:
                raise EnvironmentProcessError(
                    f"{self.name()} did not answer within {said or timeout:g} s",
                    env_id=self.env_id,
                )
        try:
            kind, payload = read_message(self._fd)
        except (EOFError, OSError):
            raise self._crash_error() from None
        self._awaiting_reply = False
        if kind == MessageType.EXCEPTION:
            raise self._remote_error(pickle.loads(payload))
        if kind not in expected:
            raise EnvironmentProcessError(
                f"{self.name()}: protocol error, got {MessageType(kind).name} while "
                f"expecting {[MessageType(k).name for k in expected]}",
                env_id=self.env_id,
            )
        return kind, payload

    def _crash_error(self) -> EnvironmentProcessCrashed:
        self.process.join(1.0)
        exitcode = self.process.exitcode
        error = EnvironmentProcessCrashed(
            f"{self.name()} died with {describe_exitcode(exitcode)}",
            env_id=self.env_id,
            exitcode=exitcode,
        )
        self._awaiting_reply = False
        self.failure = error
        return error

    def _remote_error(self, info: dict) -> EnvironmentProcessError:
        error = EnvironmentProcessError(
            f"{self.name()} raised {info['type']}: {info['message']}\n\n"
            f"Traceback in the worker process:\n{info['traceback']}",
            env_id=self.env_id,
            remote_traceback=info["traceback"],
        )
        with contextlib.suppress(Exception):
            error.__cause__ = cloudpickle.loads(info["exception"])
        return error
