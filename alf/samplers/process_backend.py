"""The ``'processes'`` backend: each sampler is a child process on this machine.

A sampler process is started like alf's environment workers (``process_connection``:
``forkserver`` with alf preloaded, ``spawn`` where that is missing; the parent's
``__main__`` hidden) and talks to the learner over one duplex pipe. Every message is
one pickled ``(kind, value)`` tuple of plain CPU data: requests ``(command, payload)``
one at a time, each answered by ``('ok', reply)`` or ``('error', description)``
(pickled by ``serialization.dumps``: tensors as numpy arrays); the
first message is ``('ready', description)`` once the sampler is built. The process
is not a daemon (its environments may run in processes of their own); it exits when
the pipe closes, so a learner that dies leaves no sampler behind.
"""

from __future__ import annotations

import contextlib
import multiprocessing.connection
import signal
import time
import traceback
import weakref

from alf.environments.process_connection import _main_module_hidden, get_context
from alf.samplers.errors import SamplerError
from alf.samplers.serialization import dumps, loads


def _pack(kind: str, value) -> bytes:
    return dumps((kind, value))


def _error_description(index: int) -> dict:
    return {"traceback": traceback.format_exc(), "index": index}


def sampler_main(conn, spec) -> None:
    """The sampler process: build the ``SamplerWorker``, then serve requests until the
    pipe closes or ``close`` comes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the learner's to handle
    from alf.samplers.worker import SamplerWorker

    try:
        worker = SamplerWorker(spec)
        conn.send_bytes(_pack("ready", worker.description()))
    except BaseException:
        with contextlib.suppress(OSError):
            conn.send_bytes(_pack("error", _error_description(spec.index)))
        return
    try:
        while True:
            try:
                command, payload = loads(conn.recv_bytes())
            except (EOFError, OSError):
                return  # the learner is gone
            if command == "close":
                return
            try:
                message = _pack("ok", worker.handle(command, payload))
            except Exception:
                message = _pack("error", _error_description(spec.index))
            try:
                conn.send_bytes(message)
            except OSError:
                return
    finally:
        worker.close()


def _stop(process, conn, grace: float) -> None:
    with contextlib.suppress(OSError, ValueError):
        conn.send_bytes(_pack("close", None))
    process.join(grace)
    for stop in ("terminate", "kill"):
        if process.exitcode is None:
            getattr(process, stop)()
            process.join(1.0)
    conn.close()


class ProcessChannel:
    """The learner's end of one sampler process.

    Args:
        spec: the ``SamplerSpec`` it is started with.
    """

    def __init__(self, spec):
        self.spec = spec
        context = get_context()
        self._conn, child_conn = context.Pipe(duplex=True)
        self._process = context.Process(
            target=sampler_main, args=(child_conn, spec), name=f"alf-sampler-{spec.index}"
        )
        with _main_module_hidden():
            self._process.start()
        child_conn.close()
        self._finalizer = weakref.finalize(self, _stop, self._process, self._conn, 5.0)

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def alive(self) -> bool:
        return self._process.is_alive()

    def exit_description(self) -> str:
        from alf.environments.process_protocol import describe_exitcode

        self._process.join(0.5)
        return f"died with {describe_exitcode(self._process.exitcode)}"

    def send(self, command: str, payload) -> None:
        """Send a request (a dead sampler's broken pipe is found by the next wait)."""
        with contextlib.suppress(OSError, ValueError):
            self._conn.send_bytes(_pack(command, payload))

    def waitable(self):
        return self._conn

    def ready(self) -> bool:
        """Whether a reply is waiting (or the pipe is closed: the reply would fail)."""
        try:
            return self._conn.poll(0)
        except (OSError, ValueError):
            return True

    def receive(self):
        """The next reply: ``(kind, value)``; raises ``SamplerError`` if the pipe broke."""
        try:
            return loads(self._conn.recv_bytes())
        except (EOFError, OSError) as e:
            raise SamplerError(f"sampler {self.spec.index} (pid {self.pid}) is gone") from e

    def kill(self) -> None:
        if self._process.exitcode is None:
            self._process.kill()
            self._process.join(1.0)

    def close(self, grace: float = 5.0) -> None:
        detached = self._finalizer.detach()
        if detached is not None:
            _stop(self._process, self._conn, grace)

    @staticmethod
    def wait(channels: list, timeout: float) -> list:
        """The channels among ``channels`` with a reply waiting or a dead process, waiting
        up to ``timeout`` seconds for one."""
        by_conn = {id(c._conn): c for c in channels}
        by_sentinel = {c._process.sentinel: c for c in channels}
        objects = [c._conn for c in channels] + list(by_sentinel)
        ready = multiprocessing.connection.wait(objects, timeout)
        found = []
        for obj in ready:
            channel = by_sentinel[obj] if isinstance(obj, int) else by_conn[id(obj)]
            if channel not in found:
                found.append(channel)
        return found

    @staticmethod
    def close_all(channels: list, grace: float = 5.0) -> None:
        """Close ``channels`` together: one grace period for all, then terminate and kill."""
        for channel in channels:
            channel.send("close", None)
        deadline = time.monotonic() + grace
        for channel in channels:
            channel._process.join(max(0.0, deadline - time.monotonic()))
        for channel in channels:
            channel.close(grace=0.0)
