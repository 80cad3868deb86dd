"""``SamplerUnroller``: the learner's actor when the acting runs in remote samplers.

It is an ``Actor`` (``alf/learners/acting.py``), as the in-process ``Unroller`` is
(``unroll``, ``restart``, ``prenormalize``, ``metrics``, ``env``, ``policy``), so
``train_iter``, the learners and the trainer are unchanged: each ``unroll`` returns
the ``Unroll`` of all ``S * E`` envs, rows in sampler order (sampler ``w``'s envs are
rows ``w*E .. (w+1)*E-1``, as in-process), raw or transformed as the learner asks,
with the bootstrap row when asked. The learner's ``EpisodeMetrics`` are fed with the
raw time steps the samplers report, one ``[S*E]`` step at a time as in-process; the
data transformers' rollout statistics collected by the samplers (local inference)
are handed to the learner's transformers in the same order, so ``after_train_iter``
applies the updates the in-process run would.

Local inference: at each ``unroll`` the learner's weights and statistics are sent,
with their version (the number of training iterations done in this process), to the
samplers that do not hold them yet; every sampler acts one whole unroll with them.
With ``max_policy_lag > 0`` a sampler is asked for its next unroll as soon as its
last one came in, so it collects while the learner trains; an unroll older than
``max_policy_lag`` versions is dropped (``samplers/dropped_unrolls``, a log line)
and asked for again. Server inference: ``InferenceServer``. Prenormalization runs
through the server in both modes (the statistics then equal the in-process run's).
"""

from __future__ import annotations

import logging

import alf.nest as nest
import alf.summary
from alf.data_transformers import prenormalizing
from alf.learners.acting import Actor, Unroll
from alf.learners.unroller import AlgorithmPolicy
from alf.metrics import EpisodeMetrics
from alf.samplers.pool import REPLACED
from alf.samplers.server import InferenceServer, cat_nests
from alf.samplers.worker import policy_weights
from alf.utils.device import to_device
from alf.utils.schedulers import get_progress

logger = logging.getLogger(__name__)


class SamplerUnroller(Actor):
    """The actor of ``algorithm`` in the samplers of ``pool`` (see the module doc).

    Args:
        pool: the started ``SamplerPool``.
        algorithm: the learner's ``RLAlgorithm``.
        env: the ``SamplerEnvironment`` (specs of the samplers' envs, batch ``S * E``).
    """

    def __init__(self, pool, algorithm, env):
        config = pool.config
        self._pool = pool
        self._algorithm = algorithm
        self._env = env
        self._policy = AlgorithmPolicy(algorithm)
        self._metrics = EpisodeMetrics(env.batch_size)
        self._local = config.inference == "local"
        self._max_lag = config.max_policy_lag
        self._server = InferenceServer(
            pool, self._policy, config.max_batch_size, config.batch_timeout
        )
        self._version = 0
        self._weights = None  # (version, weights) last computed
        self._outstanding = {}  # sampler -> version of the unroll it is acting
        self._last_request = None
        #: unrolls dropped for being too old (max_policy_lag)
        self.num_dropped_unrolls = 0

    @property
    def server(self) -> InferenceServer:
        return self._server

    @property
    def pool(self):
        return self._pool

    @property
    def version(self) -> int:
        """The version of the weights the next unroll is acted with."""
        return self._version

    # -- episodes ------------------------------------------------------------------------

    def restart(self, seed: int | None = None) -> None:
        """Start new episodes at the next step; with ``seed``, every sampler reseeds its
        envs (``seed + env_id``, as in-process) and its random stream first. Unrolls still
        being acted are discarded (they belong to the episodes cut short)."""
        self._drain()
        self._pool.request_all("restart", {"seed": seed})
        self._server.restart(seed)

    def _drain(self) -> None:
        """Wait for (and drop) the unrolls the samplers are acting ahead."""
        while self._outstanding:
            for w, _ in self._pool.wait(sorted(self._outstanding), self._pool.config.timeout):
                self._outstanding.pop(w, None)

    def prenormalize(self, num_steps: int) -> int:
        """As ``Unroller.prenormalize``: ``num_steps`` steps of every env with the current
        policy, every statistics transformer updating as it transforms; then restart."""
        self._drain()
        self._server.restart()
        with prenormalizing(self._policy.data_transformer):
            _, time_steps = self._server.run(num_steps, keep=False, prenormalize=True)
        for time_step in time_steps:
            self._metrics(time_step)
        self.restart()
        return num_steps * self._env.batch_size

    def weights_replaced(self) -> None:
        """The algorithm's weights and statistics were replaced between two iterations (a
        PBT member's exploit): unrolls acted ahead with the old ones (``max_policy_lag``)
        are dropped, and the next unroll sends the new ones to every sampler."""
        self._drain()
        self._weights = None
        self._pool.versions = [None] * self._pool.num_samplers

    # -- unrolls -------------------------------------------------------------------------

    def unroll(self, num_steps: int, raw: bool = False, bootstrap: bool = False) -> Unroll:
        """The ``Unroll`` of ``num_steps`` steps of all ``S * E`` envs (see the module doc)."""
        if self._local:
            unroll, time_steps = self._local_unroll(num_steps, raw, bootstrap)
        else:
            experiences, time_steps = self._server.run(num_steps, raw)
            boot = self._server.bootstrap(raw) if bootstrap else None
            unroll = Unroll(experiences, boot, self._version)
        for time_step in time_steps:
            self._metrics(time_step)
        self._version += 1
        return unroll

    def _request(self, w: int, request: dict) -> None:
        payload = dict(request, version=self._version)
        # e.g. off-policy algorithms act at random while the learner's buffer fills: the
        # sampler's copy has no buffer, so it is told (constant over an unroll, as here)
        payload["actor_context"] = self._algorithm.actor_context()
        # schedules in the policy (e.g. DQN's epsilon) follow the learner's progress
        payload["progress"] = tuple(get_progress(k) for k in ("iterations", "env_steps", "percent"))
        if self._pool.versions[w] != self._version:
            if self._weights is None or self._weights[0] != self._version:
                self._weights = (self._version, policy_weights(self._algorithm))
            payload["weights"] = self._weights[1]
            self._pool.versions[w] = self._version
        self._pool.send(w, "unroll", payload)
        self._outstanding[w] = self._version

    def _local_unroll(self, num_steps: int, raw: bool, bootstrap: bool):
        request = {"num_steps": num_steps, "raw": raw, "bootstrap": bootstrap}
        if request != self._last_request:
            self._drain()  # unrolls acted ahead for another request are of no use
            self._last_request = request
        for w in range(self._pool.num_samplers):
            if w not in self._outstanding:
                self._request(w, request)
        parts = {}
        while len(parts) < self._pool.num_samplers:
            waiting = sorted(self._outstanding)
            for w, reply in self._pool.wait(waiting, self._pool.config.timeout):
                self._outstanding.pop(w, None)
                if reply is not REPLACED and self._fresh(w, reply.version):
                    parts[w] = reply
                if w not in parts or self._max_lag > 0:
                    self._request(w, request)  # again, or the next one ahead
        return self._merge([parts[w] for w in range(self._pool.num_samplers)], raw)

    def _fresh(self, w: int, version: int) -> bool:
        if version >= self._version - self._max_lag:
            return True
        self.num_dropped_unrolls += 1
        logger.info(
            "Dropped an unroll of sampler %d acted with weights version %d: older than "
            "max_policy_lag=%d allows at version %d (%d dropped so far)",
            w,
            version,
            self._max_lag,
            self._version,
            self.num_dropped_unrolls,
        )
        return False

    def _merge(self, parts: list, raw: bool):
        """One ``Unroll`` of the samplers' parts (rows in sampler order), the raw time steps
        of each step, and the statistics updates handed to the learner's transformers."""
        experiences = _steps(cat_nests([p.experiences for p in parts], dim=1))
        boot = None
        if parts[0].bootstrap is not None:
            boot = cat_nests([p.bootstrap for p in parts])
        if raw:
            time_steps = [exp.time_step for exp in experiences]
        else:
            time_steps = _steps(cat_nests([p.raw_time_steps for p in parts], dim=1))
            experiences, boot = to_device(experiences), to_device(boot)
        pending = []
        for i in range(len(parts[0].statistics)):
            values = []
            if parts[0].statistics[i] is not None:
                values = to_device(_steps(cat_nests([p.statistics[i] for p in parts], dim=1)))
            pending.append(values)
        self._algorithm.data_transformer.add_pending_statistics(pending)
        version = min(p.version for p in parts)
        if alf.summary.should_record_summaries():
            alf.summary.scalar("samplers/policy_lag", float(self._version - version))
            alf.summary.scalar("samplers/dropped_unrolls", float(self.num_dropped_unrolls))
            alf.summary.scalar("samplers/replacements", float(self._pool.num_replacements))
        return Unroll(experiences, boot, version), time_steps

    def close(self) -> None:
        self._pool.close()


def _steps(stacked) -> list:
    """The per-step nests ``[B, ...]`` of a stacked nest ``[T, B, ...]``."""
    num_steps = nest.flatten(stacked)[0].shape[0]
    return [nest.map_structure(lambda x, t=t: x[t], stacked) for t in range(num_steps)]
