"""``ProcessEnvironment``: one environment in a subprocess behind an explicit protocol.

The environment constructor is sent cloudpickled, so lambdas and ``functools.partial``
both work. The parent/worker protocol (message framing, message types, the
shared-memory data path) is in ``process_protocol``; the worker loop in
``process_worker``; the parent's end of one worker (starting it with the forkserver,
waits bounded by a timeout and a liveness check, stopping it) in ``process_connection``.

Robustness. A dead worker (e.g. SIGKILL) raises ``EnvironmentProcessError`` naming the
env_id and exit code at once, and a hung one raises after ``timeout``. Worker
exceptions are re-raised in the parent with the worker's traceback text. With
``restart_on_crash`` a dead worker is replaced and reset (its row restarts with FIRST),
at most ``max_restarts`` times per ``restart_window`` seconds (``RestartBudget``).
Workers ignore SIGINT, so Ctrl-C reaches the parent only; ``close()`` (also run by a
finalizer at interpreter exit) asks the worker to exit, then terminates and kills it.
"""

from __future__ import annotations

import logging
import pickle
import time

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
from alf.environments.process_connection import (  # noqa: F401 (re-exported)
    POLL_INTERVAL,
    WorkerConnection,
    _main_module_hidden,
    get_context,
    shutdown_workers,
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

logger = logging.getLogger(__name__)


class RestartBudget:
    """How often ``restart_on_crash`` may replace a crashed worker: ``max_restarts``
    restarts within any ``window`` seconds. A worker that dies on every step would
    otherwise be restarted forever and every step would be FIRST."""

    def __init__(self, max_restarts: int, window: float):
        self.max_restarts, self.window = max_restarts, window
        self._times: list[float] = []

    def spend(self, error: Exception, env_id) -> None:
        """Count one restart after ``error``; raise ``EnvironmentProcessCrashed`` (naming
        ``error``) instead when the budget of the last ``window`` seconds is spent."""
        now = time.monotonic()
        self._times = [t for t in self._times if now - t < self.window]
        if len(self._times) >= self.max_restarts:
            raise EnvironmentProcessCrashed(
                f"{error}; it crashed {len(self._times) + 1} times within "
                f"{self.window:g} s, more than restart_on_crash allows "
                f"(max_restarts={self.max_restarts} per restart_window)",
                env_id=env_id,
                exitcode=getattr(error, "exitcode", None),
            )
        self._times.append(now)


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
        self._worker = None  # the WorkerConnection of the current worker
        self.env_id = env_id
        self._restart_budget = RestartBudget(max_restarts, restart_window)
        self._constructor_bytes = cloudpickle.dumps(env_constructor)
        # The worker is a fresh process: it gets this process's configured values.
        self._configs = export_configs()
        self._flatten = flatten
        self._torch_num_threads = torch_num_threads
        self._timeout = timeout
        self._start_timeout = start_timeout
        self._restart_on_crash = restart_on_crash
        self._context = get_context(start_method)
        self._description = None
        self._shared = None  # (time-step SharedBuffer, action SharedBuffer, first row)
        self._own_buffers = None  # the same buffers when this env owns them
        self._closed = False
        #: how many times the worker was restarted after a crash.
        self.num_restarts = 0
        if wait_to_start:
            self.start()
            self.wait_until_ready()

    # -- life cycle ------------------------------------------------------------------

    @property
    def env_id(self):
        """The id of the environment (an int, or a ``range`` of ids for a batched member)."""
        return self._env_id

    @env_id.setter
    def env_id(self, env_id) -> None:
        self._env_id = env_id
        if self._worker is not None:
            self._worker.env_id = env_id

    def start(self) -> None:
        """Start the worker process (returns at once; see ``wait_until_ready``)."""
        worker_args = (
            self._constructor_bytes,
            self.env_id,
            self._torch_num_threads,
            self._configs,
        )
        self._worker = WorkerConnection(self._context, self.env_id, worker_args, self._timeout)

    def wait_until_ready(self) -> None:
        """Wait for the worker to build the env; on failure close and raise its error."""
        try:
            description = self._worker.wait_ready(self._start_timeout)
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
        return None if self._worker is None else self._worker.pid

    def detach_worker(self):
        """``(process, conn)`` of the live worker, handed over to the caller to stop (with
        ``shutdown_workers``, together with others); None when there is none."""
        return None if self._worker is None else self._worker.detach()

    def close(self) -> None:
        """Stop the worker and release shared memory. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._worker is not None:
            self._worker.stop()
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
        self._worker.send_handles(time_step_buffer.fd, action_buffer.fd)
        self._worker.receive((MessageType.RESULT,), self._timeout)

    # -- messages --------------------------------------------------------------------------

    def _request(self, kind: MessageType, payload: bytes = b"") -> None:
        """Send a request that expects one reply (after draining a stale reply)."""
        if self._closed:
            raise EnvironmentProcessError(f"{self._name()} is closed", env_id=self.env_id)
        self._worker.request(kind, payload)

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
            kind, payload = self._worker.receive(expected, timeout, said=self._timeout)
        except EnvironmentProcessCrashed:
            if not self._restart_on_crash:
                raise
            self._restart()
            self._request(MessageType.RESET)
            kind, payload = self._worker.receive(expected, self._timeout)
        return None if kind == MessageType.DONE else pickle.loads(payload)

    def _restart(self) -> None:
        """Replace a dead worker by a new one (same constructor, same shared rows), unless
        the restart budget is spent: then the crash is raised."""
        error = self._worker.failure or EnvironmentProcessCrashed(
            f"{self._name()} crashed", env_id=self.env_id
        )
        self._restart_budget.spend(error, self.env_id)
        self.num_restarts += 1
        logger.warning("%s crashed; restarting it (restart #%d)", self._name(), self.num_restarts)
        self._worker.stop()
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
        return pickle.loads(self._worker.receive((MessageType.RESULT,), self._timeout)[1])

    def get_attr(self, name: str):
        """``env.name`` in the worker."""
        self._request(MessageType.GETATTR, pickle.dumps(name))
        return pickle.loads(self._worker.receive((MessageType.RESULT,), self._timeout)[1])

    def seed(self, seed) -> None:
        self.call("seed", seed)

    def render(self, mode: str = "rgb_array"):
        return self.call("render", mode)
