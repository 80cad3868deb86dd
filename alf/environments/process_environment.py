"""``ProcessEnvironment``: one environment in a subprocess behind an explicit protocol.

The worker is started with the ``forkserver`` start method (``spawn`` where it is not
available): the fork server imports torch and alf once, and every later worker is a
cheap fork of it (~10 ms instead of ~0.8 s of imports per worker with ``spawn``), while
never forking a parent that may already run torch threads. The environment
constructor is sent cloudpickled, so lambdas and ``functools.partial`` both work.

The parent/worker protocol (message framing, message types, the shared-memory data
path) is in ``process_protocol``; the worker loop in ``process_worker``.

Robustness. Every wait polls the pipe in short slices and checks between slices that
the worker is alive, so a dead worker (e.g. SIGKILL) raises ``EnvironmentProcessError``
naming the env_id and exit code at once, and a hung one raises after ``timeout``.
Worker exceptions are re-raised in the parent with the worker's traceback text. With
``restart_on_crash`` a dead worker is replaced and reset (its row restarts with FIRST).
Workers ignore SIGINT, so Ctrl-C reaches the parent only; ``close()`` (also run by a
finalizer at interpreter exit) asks the worker to exit, then terminates and kills it.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import pickle
import select
import sys
import time
import weakref
from multiprocessing import reduction

import cloudpickle

import alf.nest as nest
from alf.configuration.transfer import export_configs
from alf.data_structures import TimeStep
from alf.environments.alf_environment import AlfEnvironment
from alf.environments.batched_environment import (
    NestLayout,
    check_batched_leaves,
    to_numpy_leaf,
)
from alf.environments.process_protocol import (  # noqa: F401 (re-exported)
    EnvironmentProcessCrashed,
    EnvironmentProcessError,
    MessageType,
    SharedBuffer,
    describe_exitcode,
    format_env_id,
    read_message,
    write_message,
)
from alf.environments.process_worker import worker_main

logger = logging.getLogger(__name__)

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


class ProcessEnvironment(AlfEnvironment):
    """One environment in a subprocess, driven through an explicit message protocol.

    The environment built by ``env_constructor`` may be unbatched (numpy nests, no
    batch dim) or a batched numpy environment such as
    ``BatchedEnvironment(..., torch_output=False)`` (numpy nests ``[b, ...]``). This
    class keeps that interface: it takes and returns numpy nests and mirrors
    ``batched``/``batch_size``. ``ParallelAlfEnvironment`` stacks several of them
    into torch tensors.

    Args:
        env_constructor: zero-argument callable building the environment in the
            worker; sent with cloudpickle.
        env_id: the id of the environment (an int, or a ``range`` of ids for a batched
            member), used in process names and error messages.
        flatten: ship actions and time steps through shared memory as flat byte
            blocks (fast); otherwise pickle their leaves over the pipe.
        torch_num_threads: ``torch.set_num_threads`` in the worker (None: leave it).
        timeout: seconds to wait for any answer of a live worker.
        start_timeout: seconds to wait for the environment to be built.
        restart_on_crash: when the worker dies, start a new one, reset it and return
            its FIRST time step from the ``step``/``reset`` that found the crash.
        start_method: multiprocessing start method (default forkserver, else spawn).
        wait_to_start: start the worker and wait until the env is built here; when
            False, call ``start()`` and ``wait_until_ready()`` yourself (to start
            several workers concurrently).
        max_restarts, restart_window: the budget of ``restart_on_crash``: a crash
            after ``max_restarts`` restarts within ``restart_window`` seconds is raised.
    """

    def __init__(
        self,
        env_constructor,
        env_id=None,
        flatten: bool = True,
        torch_num_threads: int | None = 1,
        timeout: float = 300.0,
        start_timeout: float = 300.0,
        restart_on_crash: bool = False,
        start_method: str | None = None,
        wait_to_start: bool = True,
        max_restarts: int = 10,
        restart_window: float = 60.0,
    ):
        super().__init__()
        self.env_id = env_id
        self._max_restarts, self._restart_window = max_restarts, restart_window
        self._restart_times: list[float] = []
        self._constructor_bytes = cloudpickle.dumps(env_constructor)
        # The worker is a fresh process: it gets this process's configured values.
        self._configs = export_configs()
        self._flatten = flatten
        self._torch_num_threads = torch_num_threads
        self._timeout = timeout
        self._start_timeout = start_timeout
        self._restart_on_crash = restart_on_crash
        self._context = get_context(start_method)
        self._process = self._conn = self._finalizer = None
        self._description = None
        self._shared = None  # (time-step SharedBuffer, action SharedBuffer, first row)
        self._own_buffers = None  # the same buffers when this env owns them
        self._awaiting_reply = False
        self._failure = None
        self._closed = False
        #: how many times the worker was restarted after a crash.
        self.num_restarts = 0
        if wait_to_start:
            self.start()
            self.wait_until_ready()

    # -- life cycle ------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker process (returns at once; see ``wait_until_ready``)."""
        parent_conn, child_conn = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=worker_main,
            args=(
                child_conn,
                self._constructor_bytes,
                self.env_id,
                self._torch_num_threads,
                self._configs,
            ),
            name=f"alf-env-{format_env_id(self.env_id)}",
            daemon=True,
        )
        with _main_module_hidden():
            process.start()
        child_conn.close()
        self._process, self._conn = process, parent_conn
        self._fd = parent_conn.fileno()
        self._poller = select.poll()
        self._poller.register(self._fd, select.POLLIN)
        self._finalizer = weakref.finalize(self, _shutdown_worker, process, parent_conn, 5.0)
        self._awaiting_reply = True

    def wait_until_ready(self) -> None:
        """Wait for the worker to build the env; on failure close and raise its error."""
        try:
            self._awaiting_reply = False
            _, payload = self._receive((MessageType.READY,), self._start_timeout)
            description = pickle.loads(payload)
            if self._description is not None:
                self._check_same_description(description)
            self._description = description
            if self._flatten and self._shared is None:
                self._create_own_buffers()
            elif self._shared is not None:
                self._send_attach()
        except BaseException:
            self.close()
            raise

    def _check_same_description(self, description: dict) -> None:
        if description["time_step_spec"] != self._description["time_step_spec"]:
            raise EnvironmentProcessError(
                f"{self._name()}: the restarted environment has a different time_step_spec",
                env_id=self.env_id,
            )

    @property
    def pid(self) -> int | None:
        """The worker's process id."""
        return None if self._process is None else self._process.pid

    def detach_worker(self):
        """``(process, conn)`` of the live worker, handed over to the caller to stop (with
        ``shutdown_workers``, together with others); None when there is none."""
        detached = None if self._finalizer is None else self._finalizer.detach()
        return None if detached is None else detached[2][:2]

    def close(self) -> None:
        """Stop the worker and release shared memory. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._finalizer is not None:
            self._finalizer()
        if self._own_buffers is not None:
            self._own_time_step_views = self._own_action_views = None
            for buffer in self._own_buffers:
                buffer.close()
            self._own_buffers = None
        self._shared = None

    # -- description -------------------------------------------------------------------

    def _info(self, key: str):
        if self._description is None:
            raise RuntimeError(f"{self._name()}: the worker is not ready yet")
        return self._description[key]

    @property
    def batched(self) -> bool:
        return self._info("batched")

    @property
    def batch_size(self) -> int:
        return self._info("batch_size")

    @property
    def num_tasks(self) -> int:
        return self._info("num_tasks")

    def observation_spec(self):
        return self._info("observation_spec")

    def action_spec(self):
        return self._info("action_spec")

    def reward_spec(self):
        return self._info("reward_spec")

    def env_info_spec(self):
        return self._info("env_info_spec")

    def time_step_spec(self) -> TimeStep:
        return self._info("time_step_spec")

    def _name(self) -> str:
        return f"Environment worker {format_env_id(self.env_id)} (pid {self.pid})"

    # -- shared memory -------------------------------------------------------------------

    def attach_shared_buffers(self, time_step_buffer, action_buffer, row_start: int) -> None:
        """Make the worker use rows ``[row_start, row_start + batch_size)`` of shared blocks.

        ``ParallelAlfEnvironment`` owns the blocks and lays them out with
        ``NestLayout`` for ``time_step_spec()`` / ``action_spec()``.

        Args:
            time_step_buffer: ``SharedBuffer`` the worker writes time steps into.
            action_buffer: ``SharedBuffer`` the worker reads actions from.
            row_start: the worker's first row.
        """
        self._shared = (time_step_buffer, action_buffer, row_start)
        self._send_attach()

    def _create_own_buffers(self) -> None:
        time_step_layout = NestLayout(self.time_step_spec(), self.batch_size)
        action_layout = NestLayout(self.action_spec(), self.batch_size)
        buffers = (SharedBuffer(time_step_layout), SharedBuffer(action_layout))
        self._own_buffers = buffers
        if self.batched:
            self._own_time_step_views, self._own_action_views = buffers[0].views, buffers[1].views
        else:
            self._own_time_step_views = time_step_layout.unbatched_views(buffers[0].array)
            self._own_action_views = action_layout.unbatched_views(buffers[1].array)
        self._time_step_treespec = time_step_layout.treespec
        self.attach_shared_buffers(*buffers, 0)

    def _send_attach(self) -> None:
        time_step_buffer, action_buffer, row_start = self._shared
        spec = {
            "time_step_nbytes": time_step_buffer.nbytes,
            "action_nbytes": action_buffer.nbytes,
            "time_step_fields": time_step_buffer.layout.fields,
            "action_fields": action_buffer.layout.fields,
            "rows": (row_start, row_start + self.batch_size),
        }
        self._request(MessageType.ATTACH, pickle.dumps(spec))
        reduction.send_handle(self._conn, time_step_buffer.fd, self.pid)
        reduction.send_handle(self._conn, action_buffer.fd, self.pid)
        self._receive((MessageType.RESULT,), self._timeout)

    # -- messages --------------------------------------------------------------------------

    def _request(self, kind: MessageType, payload: bytes = b"") -> None:
        """Send a request that expects one reply (after draining a stale reply)."""
        if self._closed:
            raise EnvironmentProcessError(f"{self._name()} is closed", env_id=self.env_id)
        if self._failure is not None:
            raise self._failure
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
            self._receive(tuple(MessageType), self._timeout)
        except EnvironmentProcessCrashed:
            raise
        except EnvironmentProcessError:
            pass

    def _receive(self, expected: tuple, timeout: float, said: float | None = None):
        """Wait for the next message, checking that the worker lives, and decode it.

        ``said``: the timeout to name in the error (the whole budget when ``timeout`` is
        what is left of a shared deadline).

        Returns:
            ``(kind, payload)``. An EXCEPTION message is raised as
            ``EnvironmentProcessError``.
        """
        poll, process = self._poller.poll, self._process
        wait_ms = int(POLL_INTERVAL * 1000)
        deadline = time.monotonic() + timeout
        while not poll(wait_ms):
            if not process.is_alive():
                if poll(0):
                    break  # its last message is still in the pipe
                raise self._crash_error()
            if time.monotonic() > deadline:
                raise EnvironmentProcessError(
                    f"{self._name()} did not answer within {said or timeout:g} s",
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
                f"{self._name()}: protocol error, got {MessageType(kind).name} while "
                f"expecting {[MessageType(k).name for k in expected]}",
                env_id=self.env_id,
            )
        return kind, payload

    def _crash_error(self) -> EnvironmentProcessCrashed:
        self._process.join(1.0)
        exitcode = self._process.exitcode
        error = EnvironmentProcessCrashed(
            f"{self._name()} died with {describe_exitcode(exitcode)}",
            env_id=self.env_id,
            exitcode=exitcode,
        )
        self._awaiting_reply = False
        self._failure = error
        return error

    def _remote_error(self, info: dict) -> EnvironmentProcessError:
        error = EnvironmentProcessError(
            f"{self._name()} raised {info['type']}: {info['message']}\n\n"
            f"Traceback in the worker process:\n{info['traceback']}",
            env_id=self.env_id,
            remote_traceback=info["traceback"],
        )
        with contextlib.suppress(Exception):
            error.__cause__ = cloudpickle.loads(info["exception"])
        return error

    # -- running ----------------------------------------------------------------------------

    def send_reset(self) -> None:
        """Ask the worker to reset (the reply is read by ``receive_time_step``)."""
        self._request_with_restart(MessageType.RESET)

    def send_step(self, action_leaves=None) -> None:
        """Ask the worker to step.

        Args:
            action_leaves: with ``flatten=False``, the flattened numpy action nest;
                with ``flatten=True``, None: the action must already be in the shared
                action block.
        """
        payload = b"" if self._shared is not None else pickle.dumps(action_leaves, protocol=5)
        self._request_with_restart(MessageType.STEP, payload)

    def _request_with_restart(self, kind: MessageType, payload: bytes = b"") -> None:
        try:
            self._request(kind, payload)
        except EnvironmentProcessCrashed:
            if not self._restart_on_crash:
                raise
            self._restart()
            self._request(MessageType.RESET)

    def receive_time_step(self, deadline: float | None = None):
        """Wait for the reply to ``send_step``/``send_reset``.

        Args:
            deadline: ``time.monotonic()`` by which the reply must have come (a batch of
                workers waits on one deadline, so N hung workers cost one timeout, not N);
                None: ``timeout`` from now.

        Returns:
            None with shared memory (the time step is in the shared block), else the
            list of numpy leaves of the time step (``alf.nest.flatten`` order).
        """
        expected = (MessageType.DONE, MessageType.RESULT)
        timeout = self._timeout if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            kind, payload = self._receive(expected, timeout, said=self._timeout)
        except EnvironmentProcessCrashed:
            if not self._restart_on_crash:
                raise
            self._restart()
            self._request(MessageType.RESET)
            kind, payload = self._receive(expected, self._timeout)
        return None if kind == MessageType.DONE else pickle.loads(payload)

    def _restart(self) -> None:
        """Replace a dead worker by a new one (same constructor, same shared rows), unless
        it crashed ``max_restarts`` times within ``restart_window`` seconds: then the
        crash is raised (a worker that dies on every step would otherwise be restarted
        forever and every step would be FIRST)."""
        now = time.monotonic()
        self._restart_times = [t for t in self._restart_times if now - t < self._restart_window]
        if len(self._restart_times) >= self._max_restarts:
            error = self._failure or EnvironmentProcessCrashed(
                f"{self._name()} crashed", env_id=self.env_id
            )
            raise EnvironmentProcessCrashed(
                f"{error}; it crashed {len(self._restart_times) + 1} times within "
                f"{self._restart_window:g} s, more than restart_on_crash allows "
                f"(max_restarts={self._max_restarts} per restart_window)",
                env_id=self.env_id,
                exitcode=getattr(error, "exitcode", None),
            )
        self._restart_times.append(now)
        self.num_restarts += 1
        logger.warning("%s crashed; restarting it (restart #%d)", self._name(), self.num_restarts)
        self._finalizer()
        self._failure = None
        self.start()
        self.wait_until_ready()

    def _reset(self) -> TimeStep:
        self.send_reset()
        return self._time_step_from(self.receive_time_step())

    def _step(self, action) -> TimeStep:
        leaves = [to_numpy_leaf(leaf) for leaf in nest.flatten(action)]
        if self._shared is None:
            self.send_step(leaves)
        else:
            self._write_action(leaves)
            self.send_step()
        return self._time_step_from(self.receive_time_step())

    def _write_action(self, leaves) -> None:
        specs = nest.flatten(self.action_spec())
        if self.batched:
            check_batched_leaves(leaves, specs, self.batch_size)
        for view, leaf, spec in zip(self._own_action_views, leaves, specs):
            if not self.batched and leaf.shape != tuple(spec.shape):
                raise ValueError(f"{self._name()}: action of shape {leaf.shape} for {spec}")
            view[...] = leaf

    def _time_step_from(self, leaves) -> TimeStep:
        if leaves is None:
            leaves = [view.copy() for view in self._own_time_step_views]
            return self._time_step_treespec.unflatten(leaves)
        return nest.pack_sequence_as(self.time_step_spec(), leaves)

    # -- remote access -----------------------------------------------------------------------

    def call(self, name: str, *args, **kwargs):
        """Call ``env.name(*args, **kwargs)`` in the worker and return the result."""
        self._request(MessageType.CALL, cloudpickle.dumps((name, args, kwargs)))
        return pickle.loads(self._receive((MessageType.RESULT,), self._timeout)[1])

    def get_attr(self, name: str):
        """``env.name`` in the worker."""
        self._request(MessageType.GETATTR, pickle.dumps(name))
        return pickle.loads(self._receive((MessageType.RESULT,), self._timeout)[1])

    def seed(self, seed) -> None:
        self.call("seed", seed)

    def render(self, mode: str = "rgb_array"):
        return self.call("render", mode)
