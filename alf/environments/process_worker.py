"""The worker side of ``ProcessEnvironment``: the loop run in the environment's subprocess.

``worker_main`` applies the parent's configured values (``alf.configuration.transfer``),
builds the environment from its cloudpickled constructor, sends READY
with the specs, then serves RESET / STEP / CALL / GETATTR / ATTACH messages until
CLOSE or until the parent is gone (``process_protocol`` describes the messages). An
exception while serving goes back to the parent as an EXCEPTION message with its
traceback and env_id; the worker keeps serving. SIGINT is ignored: Ctrl-C is the
parent's to handle.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import pickle
import signal
import sys
import traceback
from multiprocessing import reduction

import cloudpickle
import numpy as np

import alf.nest as nest
from alf.configuration.transfer import import_configs
from alf.environments.alf_environment import AlfEnvironment
from alf.environments.batched_environment import LeafGetter, NestLayout
from alf.environments.process_protocol import MessageType, read_message, write_message

logger = logging.getLogger(__name__)


def _exception_payload(env_id) -> bytes:
    """Pickled description of the exception being handled."""
    exc = sys.exc_info()[1]
    info = {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": traceback.format_exc(),
        "env_id": env_id,
    }
    with contextlib.suppress(Exception):
        info["exception"] = cloudpickle.dumps(exc)
    return pickle.dumps(info)


class _Worker:
    """The loop run in the subprocess: build the env, then serve messages."""

    def __init__(self, conn, env_id):
        self._conn = conn
        self._fd = conn.fileno()
        self._env_id = env_id
        self._env = None
        self._flat = None
        self._handlers = {
            MessageType.RESET: self._on_reset,
            MessageType.STEP: self._on_step,
            MessageType.CALL: self._on_call,
            MessageType.GETATTR: self._on_getattr,
            MessageType.ATTACH: self._on_attach,
        }

    def run(self, constructor_bytes: bytes, configs: list | None = None) -> None:
        try:
            if configs:
                import_configs(configs)
            self._env = cloudpickle.loads(constructor_bytes)()
            self._send(MessageType.READY, pickle.dumps(_describe(self._env)))
        except BaseException:
            with contextlib.suppress(OSError):
                self._send(MessageType.EXCEPTION, _exception_payload(self._env_id))
            return
        try:
            self._serve()
        finally:
            try:
                self._env.close()
            except Exception:
                logger.exception("env_id=%s: error while closing the environment", self._env_id)

    def _serve(self) -> None:
        fd = self._fd
        while True:
            try:
                kind, payload = read_message(fd)
            except (EOFError, OSError):
                return  # the parent is gone
            if kind == MessageType.CLOSE:
                return
            try:
                self._handlers[kind](payload)
            except Exception:
                try:
                    self._send(MessageType.EXCEPTION, _exception_payload(self._env_id))
                except OSError:
                    return

    def _send(self, kind: MessageType, payload: bytes = b"") -> None:
        write_message(self._fd, kind, payload)

    def _reply_time_step(self, time_step) -> None:
        if self._flat is None:
            self._send(MessageType.RESULT, pickle.dumps(nest.flatten(time_step), protocol=5))
        else:
            self._flat.write_time_step(time_step)
            self._send(MessageType.DONE)

    def _on_reset(self, payload: bytes) -> None:
        self._reply_time_step(self._env.reset())

    def _on_step(self, payload: bytes) -> None:
        if self._flat is None:
            action = nest.pack_sequence_as(self._env.action_spec(), pickle.loads(payload))
        else:
            action = self._flat.read_action()
        self._reply_time_step(self._env.step(action))

    def _on_call(self, payload: bytes) -> None:
        name, args, kwargs = pickle.loads(payload)
        result = getattr(self._env, name)(*args, **kwargs)
        self._send(MessageType.RESULT, cloudpickle.dumps(result))

    def _on_getattr(self, payload: bytes) -> None:
        result = getattr(self._env, pickle.loads(payload))
        self._send(MessageType.RESULT, cloudpickle.dumps(result))

    def _on_attach(self, payload: bytes) -> None:
        spec = pickle.loads(payload)
        self._flat = None
        time_step_fd = reduction.recv_handle(self._conn)
        action_fd = reduction.recv_handle(self._conn)
        self._flat = _WorkerSharedIO(self._env, spec, time_step_fd, action_fd)
        self._send(MessageType.RESULT, pickle.dumps(None))


class _WorkerSharedIO:
    """The worker's views of its rows of the shared time-step and action blocks."""

    def __init__(self, env, spec: dict, time_step_fd: int, action_fd: int):
        self._time_step_map = _map_fd(time_step_fd, spec["time_step_nbytes"])
        self._action_map = _map_fd(action_fd, spec["action_nbytes"])
        rows = slice(*spec["rows"])
        self._time_step_views = _row_views(
            spec["time_step_fields"], self._time_step_map, rows, env.batched
        )
        self._action_views = _row_views(spec["action_fields"], self._action_map, rows, env.batched)
        self._action_treespec = NestLayout(env.action_spec(), 1).treespec
        self._leaves_of = LeafGetter(env.time_step_spec())

    def read_action(self):
        """A private copy of this worker's action rows, as the env's action nest."""
        leaves = [view.copy() if view.ndim else view[()] for view in self._action_views]
        return self._action_treespec.unflatten(leaves)

    def write_time_step(self, time_step) -> None:
        """Write ``time_step`` into this worker's rows, checking shapes strictly."""
        leaves = self._leaves_of(time_step)
        if len(leaves) != len(self._time_step_views):
            raise ValueError(
                f"The environment returned a time step with {len(leaves)} leaves, but its "
                f"time_step_spec has {len(self._time_step_views)}: {time_step}"
            )
        for view, leaf in zip(self._time_step_views, leaves):
            shape = leaf.shape if isinstance(leaf, np.ndarray) else np.shape(leaf)
            if shape != view.shape:
                raise ValueError(
                    f"The environment returned a leaf of shape {shape} where its "
                    f"time_step_spec has shape {view.shape}: {time_step}"
                )
            view[...] = leaf


def _map_fd(fd: int, nbytes: int) -> mmap.mmap:
    try:
        return mmap.mmap(fd, nbytes)
    finally:
        os.close(fd)


def _row_views(fields, buffer, rows: slice, batched: bool) -> list[np.ndarray]:
    """Views of ``rows`` of each leaf; without the batch dim for an unbatched env."""
    views = []
    for offset, shape, dtype in fields:
        view = np.ndarray(shape, dtype, buffer=buffer, offset=offset)[rows]
        views.append(view if batched else view.reshape(shape[1:]))
    return views


def _describe(env: AlfEnvironment) -> dict:
    """What the parent needs to know about the env, sent with READY."""
    return {
        "time_step_spec": env.time_step_spec(),
        "observation_spec": env.observation_spec(),
        "action_spec": env.action_spec(),
        "reward_spec": env.reward_spec(),
        "env_info_spec": env.env_info_spec(),
        "batched": env.batched,
        "batch_size": env.batch_size,
        "num_tasks": env.num_tasks,
    }


def worker_main(conn, constructor_bytes: bytes, env_id, torch_num_threads, configs=None) -> None:
    """Entry point of the worker process (``configs``: the parent's configured values,
    ``alf.configuration.transfer.export_configs()``, applied before the env is built)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if torch_num_threads is not None:
        import torch

        torch.set_num_threads(torch_num_threads)
    try:
        _Worker(conn, env_id).run(constructor_bytes, configs)
    finally:
        conn.close()
