"""``InferenceServer``: batched inference for samplers that only step environments.

With ``SamplerConfig.inference='server'`` the samplers hold no policy: each sends the
raw time step of its ``E`` environments and waits for their actions. The server, in
the learner's process, keeps every env's current time step, recurrent policy state and
data-transformer state (rows ``w*E .. (w+1)*E-1`` for sampler ``w``) and runs one
``rollout_step`` on all the rows waiting, in sampler order, as soon as

- ``max_batch_size`` rows are waiting, or
- every sampler with steps left in this unroll is waiting, or
- ``batch_timeout`` seconds passed since the batch's first sampler came in,

then answers each sampler of the batch with its rows' actions. A slow, silent or dead
sampler therefore delays the others by at most ``batch_timeout`` per step (a dead one
not at all: it is replaced, and its fragment of the unroll is redone from a reset).

The per-env state and the policy step are the in-process ``Unroller``'s own: the server
keeps one ``ActorCore`` (``alf/learners/acting.py``) over the ``S * E`` rows and steps
the rows of each batch with it (all rows at once when the batch is full); the bootstrap
row is ``ActorCore.bootstrap``, as in-process. A full batch is therefore exactly the
in-process ``Unroller``'s step on ``S * E`` envs (the same rows in the same order, drawing
from the learner's global random stream like the in-process actor), so with full batches
the unroll, the statistics the data transformers collect and the random stream are
bit-identical to the in-process run. A partial batch draws the same distributions in
another order.
"""

from __future__ import annotations

import time

import numpy as np
import torch

import alf.nest as nest
from alf.learners.acting import ActorCore, experience_of
from alf.samplers.pool import REPLACED
from alf.utils.device import to_cpu
from alf.utils.finite import check_time_step
from alf.utils.random_streams import ActingStreams


def cat_nests(nests: list, dim: int = 0):
    """Concatenate a list of nests of tensors along ``dim`` (the batch dim)."""
    if len(nests) == 1:
        return nests[0]
    return nest.map_structure(lambda *xs: torch.cat(xs, dim), *nests)


def _rows(value, start: int, stop: int):
    return nest.map_structure(lambda x: x[start:stop], value)


class InferenceServer:
    """Acts for the samplers of ``pool`` with ``policy`` (see the module doc).

    Args:
        pool: the ``SamplerPool``.
        policy: the learner's ``AlgorithmPolicy`` (rollout mode).
        max_batch_size: rows that trigger a batch (None: all).
        batch_timeout: seconds a batch waits for more samplers after its first.
    """

    def __init__(self, pool, policy, max_batch_size: int | None, batch_timeout: float):
        self._pool = pool
        self._policy = policy
        self._num_envs = pool.num_envs
        self._max_rows = max_batch_size or pool.num_samplers * pool.num_envs
        self._batch_timeout = batch_timeout
        self._time_steps = [None] * pool.num_samplers
        self._core = None  # the ActorCore of the S*E rows since the last restart
        # row w*E + i is env first_env_id + w*E + i of the run
        first, rows = pool.first_env_id, pool.num_samplers * pool.num_envs
        self._streams = ActingStreams(pool.seed, np.arange(first, first + rows))
        self._env_steps = 0
        #: (time, sampler indices) of the last batches run (for tests and benchmarks)
        self.batch_log = []

    def restart(self, seed: int | None = None) -> None:
        """Start new episodes at the next step (every sampler is reset first); with
        ``seed``, the rows' random streams restart from it."""
        self._time_steps = [None] * self._pool.num_samplers
        self._core = None
        if seed is not None:
            self._streams.restart(seed)

    def _ensure_core(self, prenormalize: bool = False) -> None:
        if self._core is None:
            streams = self._streams.sibling("prenormalize") if prenormalize else self._streams
            self._core = ActorCore(self._policy, self._pool.num_samplers * self._num_envs, streams)

    @torch.inference_mode()
    def run(self, num_steps: int, raw: bool = False, keep: bool = True, prenormalize=False):
        """Take ``num_steps`` steps of every sampler's envs.

        Args:
            num_steps: steps per env.
            raw: the experiences hold raw time steps with CPU copies (as ``Unroller``).
            keep: return the experiences (False: prenormalization, nothing kept).
            prenormalize: draw from the prenormalization streams (a fresh core).

        Returns:
            ``(experiences, raw_time_steps)``: per step, the ``Experience`` (an empty list
            unless ``keep``) and the raw time step of all ``S * E`` rows in sampler order.
        """
        self._ensure_core(prenormalize)
        run = _Run(self._pool.num_samplers, num_steps)
        for w, time_step in enumerate(self._time_steps):
            if time_step is None:
                self._pool.send(w, "reset")
                run.waiting.add(w)
            else:
                run.arrive(w)
        while not run.finished():
            batch = self._batch(run)
            if batch:
                self._act(run, batch, raw, keep)
            else:
                self._receive(run)
        return run.merged(num_steps, keep)

    def _batch(self, run) -> list[int]:
        """The samplers to act for now (empty: wait for more)."""
        ready = sorted(w for w in run.ready if run.steps[w] < run.num_steps)
        if not ready:
            return []
        rows = len(ready) * self._num_envs
        still_coming = [w for w in run.waiting if run.steps[w] < run.num_steps]
        overdue = time.monotonic() - run.first_arrival >= self._batch_timeout
        if rows >= self._max_rows or not still_coming or overdue:
            return ready[: max(1, self._max_rows // self._num_envs)]
        return []

    def _receive(self, run) -> None:
        """Wait for replies, at most until the pending batch is overdue."""
        timeout = self._pool.config.timeout
        if run.ready:
            timeout = max(0.0, run.first_arrival + self._batch_timeout - time.monotonic())
        for w, reply in self._pool.wait(sorted(run.waiting), timeout):
            run.waiting.discard(w)
            if reply is REPLACED:  # its rows start again from the initial states
                self._core.reset_rows(slice(w * self._num_envs, (w + 1) * self._num_envs))
                run.restart(w)
                self._pool.send(w, "reset")
                run.waiting.add(w)
                continue
            self._env_steps += self._num_envs
            check_time_step(reply, self._env_steps)
            self._time_steps[w] = reply
            run.arrive(w)

    def _act(self, run, batch: list[int], raw: bool, keep: bool) -> None:
        """One policy step on the rows of the samplers ``batch``; answer each."""
        size = self._num_envs
        rows = None  # a full batch: all rows in order, as in-process
        if batch != list(range(self._pool.num_samplers)):
            rows = torch.cat([torch.arange(w * size, (w + 1) * size) for w in batch])
        time_step = cat_nests([self._time_steps[w] for w in batch])
        taken = self._core.step(time_step, rows)
        action = to_cpu(taken.step.output)
        experience = experience_of(time_step, taken, raw) if keep else None
        self.batch_log = self.batch_log[-999:] + [(time.monotonic(), tuple(batch))]
        for i, w in enumerate(batch):
            start, stop = i * size, (i + 1) * size
            mine = _rows(experience, start, stop) if keep else None
            run.record(w, self._time_steps[w], mine)
            self._pool.send(w, "step", {"action": _rows(action, start, stop)})
            run.depart(w)

    @torch.no_grad()
    def bootstrap(self, raw: bool = False):
        """The bootstrap row of all ``S * E`` rows: a policy step on the current time steps
        with the statistics frozen; nothing changes (``ActorCore.bootstrap``)."""
        self._ensure_core()
        return self._core.bootstrap(cat_nests(self._time_steps), raw)


class _Run:
    """The bookkeeping of one ``InferenceServer.run``: per sampler, steps taken, whether
    its time step is waiting for an action (``ready``) or its reply is awaited
    (``waiting``), and the experiences of its steps so far."""

    def __init__(self, num_samplers: int, num_steps: int):
        self.num_steps = num_steps
        self.steps = [0] * num_samplers
        self.ready: set[int] = set()
        self.waiting: set[int] = set()
        self.first_arrival = 0.0
        self.records = [[] for _ in range(num_samplers)]

    def arrive(self, w: int) -> None:
        active = [v for v in self.ready if self.steps[v] < self.num_steps]
        if not active and self.steps[w] < self.num_steps:
            self.first_arrival = time.monotonic()
        self.ready.add(w)

    def depart(self, w: int) -> None:
        self.ready.discard(w)
        self.waiting.add(w)
        self.steps[w] += 1

    def restart(self, w: int) -> None:
        self.steps[w] = 0
        self.records[w] = []
        self.ready.discard(w)

    def record(self, w: int, time_step, experience) -> None:
        self.records[w].append((time_step, experience))

    def finished(self) -> bool:
        return not self.waiting and all(s >= self.num_steps for s in self.steps)

    def merged(self, num_steps: int, keep: bool):
        experiences, time_steps = [], []
        for t in range(num_steps):
            time_steps.append(cat_nests([records[t][0] for records in self.records]))
            if keep:
                experiences.append(cat_nests([records[t][1] for records in self.records]))
        return experiences, time_steps
