"""``ParallelAlfEnvironment``: several ``ProcessEnvironment``s stepped as one batch.

Each member runs in its own worker process and holds one unbatched environment or a
batched numpy one (``BatchedEnvironment(..., torch_output=False)``, see
``create_environment(batch_size_per_env=...)``). A step sends every worker its action
first and then collects every answer, so the workers step concurrently. The batch is
the concatenation of the members' rows, in member order.

With ``flatten=True`` all workers share two memory blocks laid out by ``NestLayout``
(one for actions, one for time steps, each leaf ``[B, ...]`` contiguous): the parent
writes the whole action batch with one assignment per leaf, the workers write their
rows of the time step in place, and the parent turns the block into fresh torch
tensors with one copy per leaf.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

import alf
import alf.nest as nest
from alf.data_structures import TimeStep
from alf.environments.alf_environment import AlfEnvironment
from alf.environments.batched_environment import (
    NestLayout,
    check_batched_leaves,
    check_same_time_step_spec,
    member_seeds,
    plain_numpy,
    to_numpy_leaf,
)
from alf.environments.process_environment import (
    EnvironmentProcessError,
    ProcessEnvironment,
    SharedBuffer,
    shutdown_workers,
)
from alf.environments.step_guard import StepGuard


class ParallelAlfEnvironment(AlfEnvironment):
    """Batch of environments, each in a worker process, as one batched torch env.

    ``reset()``/``step(action)`` take and return nests of torch CPU tensors
    ``[B, ...]``, ``B`` the sum of the members' batch sizes; row ``r`` of member
    ``m`` is row ``offset_m + r``. ``env_id`` rows come from the environments (their
    constructors set them; ``create_environment`` numbers them 0..B-1 in row order).
    Each member auto resets independently.

    Args:
        env_constructors: zero-argument picklable callables, each building one
            unbatched numpy env or one batched numpy env. All must have the same
            ``time_step_spec``.
        flatten: share memory blocks with the workers (fast); otherwise pickle
            actions and time steps over the pipes.
        start_serially: start one worker after the other (each waits until its env
            is built); otherwise start all and then wait for all.
        num_spare_envs: reserved for ALF's spare environments; must be 0.
        torch_num_threads_per_env: ``torch.set_num_threads`` in every worker.
        timeout: seconds to wait for a live worker's answer (see ``ProcessEnvironment``).
        restart_on_crash: replace a worker that died; its rows restart with FIRST.
        start_method: multiprocessing start method (default forkserver, else spawn).
        max_restarts, restart_window: the budget of ``restart_on_crash`` per worker
            (see ``ProcessEnvironment``).

    All workers of a step or reset share one deadline, ``timeout`` seconds after the
    request: N hung workers are reported after one timeout, not N.
    """

    def __init__(
        self,
        env_constructors: Sequence[Callable[[], AlfEnvironment]],
        flatten: bool = True,
        start_serially: bool = True,
        num_spare_envs: int = 0,
        torch_num_threads_per_env: int = 1,
        timeout: float = 300.0,
        restart_on_crash: bool = False,
        start_method: str | None = None,
        max_restarts: int = 10,
        restart_window: float = 60.0,
    ):
        super().__init__()
        self._timeout = timeout
        if num_spare_envs:
            raise NotImplementedError(
                f"num_spare_envs={num_spare_envs}: spare envs are not supported"
            )
        if not env_constructors:
            raise ValueError("ParallelAlfEnvironment needs at least one env constructor")
        self._closed = False
        self._buffers = ()
        self._guard = StepGuard(f"{len(env_constructors)} env worker processes")
        self._envs = [
            ProcessEnvironment(
                constructor,
                env_id=index,
                flatten=False,  # the shared blocks are attached by _setup_batch
                torch_num_threads=torch_num_threads_per_env,
                timeout=timeout,
                restart_on_crash=restart_on_crash,
                start_method=start_method,
                wait_to_start=False,
                max_restarts=max_restarts,
                restart_window=restart_window,
            )
            for index, constructor in enumerate(env_constructors)
        ]
        try:
            self._start_workers(start_serially)
            self._setup_batch(flatten)
        except BaseException:
            self.close()
            raise

    def _start_workers(self, start_serially: bool) -> None:
        if start_serially:
            for env in self._envs:
                env.start()
                env.wait_until_ready()
            return
        for env in self._envs:
            env.start()
        for env in self._envs:
            env.wait_until_ready()

    def _setup_batch(self, flatten: bool) -> None:
        """Check the specs, assign rows and (with ``flatten``) attach shared blocks."""
        check_same_time_step_spec(
            [env.time_step_spec() for env in self._envs],
            [f"environment {index}" for index in range(len(self._envs))],
        )
        self._rows = []
        start = 0
        for env in self._envs:
            stop = start + env.batch_size
            self._rows.append((start, stop))
            env.env_id = range(start, stop) if env.batched else start
            start = stop
        self._batch_size = start
        spec = self._envs[0]
        self._time_step_layout = NestLayout(spec.time_step_spec(), self._batch_size)
        self._action_layout = NestLayout(spec.action_spec(), self._batch_size)
        self._action_specs = self._action_layout.specs
        self._single_action_shape = None
        if not nest.is_nested(spec.action_spec()):
            self._single_action_shape = (self._batch_size, *spec.action_spec().shape)
        if flatten:
            self._buffers = (
                SharedBuffer(self._time_step_layout),
                SharedBuffer(self._action_layout),
            )
            for env, (row_start, _) in zip(self._envs, self._rows):
                env.attach_shared_buffers(*self._buffers, row_start)
            self._time_step_views = self._buffers[0].views
            self._action_views = self._buffers[1].views
        else:
            scratch = np.zeros(self._time_step_layout.nbytes, np.uint8)
            self._time_step_views = self._time_step_layout.views(scratch)
            self._action_views = None

    # -- description -----------------------------------------------------------

    @property
    def batched(self) -> bool:
        return True

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def envs(self) -> list[ProcessEnvironment]:
        """The member ``ProcessEnvironment``s, in row order."""
        return list(self._envs)

    @property
    def num_tasks(self) -> int:
        return self._envs[0].num_tasks

    def observation_spec(self):
        return self._envs[0].observation_spec()

    def action_spec(self):
        return self._envs[0].action_spec()

    def reward_spec(self):
        return self._envs[0].reward_spec()

    def env_info_spec(self):
        return self._envs[0].env_info_spec()

    def time_step_spec(self) -> TimeStep:
        return self._envs[0].time_step_spec()

    # -- running -------------------------------------------------------------------

    def _reset(self) -> TimeStep:
        return self._guard.call(self._reset_all)

    def _step(self, action) -> TimeStep:
        return self._guard.call(self._step_all, action)

    def _reset_all(self) -> TimeStep:
        for env in self._envs:
            env.send_reset()
        self._receive_all()
        return self._emit()

    def _step_all(self, action) -> TimeStep:
        if self._action_views is None:
            self._send_pickled_actions(action)
        else:
            self._write_actions(action)
            for env in self._envs:
                env.send_step()
        self._receive_all()
        return self._emit()

    def _action_leaves(self, action) -> list[np.ndarray]:
        array = None if self._single_action_shape is None else plain_numpy(action)
        if array is not None:
            leaves = [array]
        else:
            leaves = [to_numpy_leaf(leaf) for leaf in nest.flatten(action)]
        check_batched_leaves(leaves, self._action_specs, self._batch_size)
        return leaves

    def _write_actions(self, action) -> None:
        for view, leaf in zip(self._action_views, self._action_leaves(action)):
            view[...] = leaf

    def _send_pickled_actions(self, action) -> None:
        leaves = self._action_leaves(action)
        for env, (start, stop) in zip(self._envs, self._rows):
            index = slice(start, stop) if env.batched else start
            env.send_step([np.asarray(leaf[index]) for leaf in leaves])

    def _receive_all(self) -> None:
        """Collect every worker's answer; then raise the first error, if any."""
        error, deadline = None, time.monotonic() + self._timeout
        for env, (start, stop) in zip(self._envs, self._rows):
            try:
                leaves = env.receive_time_step(deadline)
            except EnvironmentProcessError as e:
                error = error or e
                continue
            if leaves is not None:
                index = slice(start, stop) if env.batched else start
                for view, leaf in zip(self._time_step_views, leaves):
                    view[index] = leaf
        if error is not None:
            raise error

    def _emit(self) -> TimeStep:
        leaves = [torch.from_numpy(view.copy()) for view in self._time_step_views]
        return self._time_step_layout.unflatten(leaves)

    def seed(self, seed) -> None:
        """Seed row ``r`` with ``seed + r`` (int) or ``seed[r]`` (a sequence of ``B``)."""
        seeds = member_seeds(seed, self._batch_size)
        for env, (start, stop) in zip(self._envs, self._rows):
            env.seed(seeds[start:stop] if env.batched else seeds[start])

    def render(self, mode: str = "rgb_array"):
        """Render the first environment."""
        return self._envs[0].render(mode)

    def close(self) -> None:
        """Close every worker and release the shared memory. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            workers = [env.detach_worker() for env in self._envs]
            shutdown_workers([w for w in workers if w is not None])  # together: bounded
            for env in self._envs:
                env.close()
        finally:
            self._time_step_views = self._action_views = None
            for buffer in self._buffers:
                buffer.close()
            self._buffers = ()


@alf.configurable
class FastParallelEnvironment(ParallelAlfEnvironment):
    """ALF's name of the multi-process environment: ``ParallelAlfEnvironment``, configurable
    as ``FastParallelEnvironment`` (``alf.config('FastParallelEnvironment',
    start_method='spawn')``). ``create_environment`` builds this class by default; the
    arguments it passes itself (``start_serially``, ``flatten``, ...) win over configured
    ones, so configure those on ``create_environment``."""
