"""``SamplerPool``: the learner's handle on its ``S`` samplers, whatever the backend.

It starts the samplers (all at once, waiting for them together), sends requests and
waits for replies with a deadline, and replaces a sampler that died or stayed silent
longer than ``SamplerConfig.timeout``: the replacement is a new process (or actor)
with new environments seeded from a seed derived from the run's seed, the sampler's
index and the replacement's number, and its own new random stream. More than
``max_restarts`` replacements of one sampler within ``restart_window`` seconds stop
the run with a ``SamplerError`` naming it; so does an exception raised in a sampler
(with the sampler's traceback), which a replacement would only repeat.
"""

from __future__ import annotations

import logging
import time

from alf.samplers.errors import SamplerError, SamplerStartError
from alf.samplers.worker import SamplerSpec
from alf.utils import seeding

logger = logging.getLogger(__name__)

#: the salt of the env seeds of replacement samplers
REPLACEMENT_SALT = 7_200

#: a reply event: the sampler was replaced (its request is lost; the caller redoes it)
REPLACED = "replaced"


class SamplerPool:
    """Starts and keeps ``config.num_samplers`` samplers (see the module doc).

    Args:
        config: the ``SamplerConfig``.
        conf_args: ``(conf_file, conf_params, gin_params)`` the samplers load.
        seed: the run's random seed.
        num_envs: environments per sampler ``E``.
        channel_class: the backend's channel (``ProcessChannel`` or ``RayChannel``).
        first_env_id: the run-wide index of the first env of sampler 0 (a learner rank's
            first env; 0 with one rank).
    """

    def __init__(
        self,
        config,
        conf_args: tuple,
        seed: int,
        num_envs: int,
        channel_class,
        first_env_id: int = 0,
    ):
        self.config = config
        self.num_envs = num_envs
        #: the run's seed and the run-wide index of sampler 0's first env
        self.seed = seed
        self.first_env_id = first_env_id
        self._seed = seed
        self._channel_class = channel_class
        self._conf_args = conf_args
        num = config.num_samplers
        self._restart_times = [[] for _ in range(num)]
        self._sent_at: dict[int, float] = {}
        #: how many samplers were replaced so far
        self.num_replacements = 0
        #: per sampler: the weights version it holds (None: none yet)
        self.versions = [None] * num
        self.channels = []
        try:
            specs = [self._spec(w, seed) for w in range(num)]
            self.channels = [channel_class(spec) for spec in specs]
            self.descriptions = self._wait_ready(list(range(num)))
        except BaseException:
            self.close()
            raise

    @property
    def num_samplers(self) -> int:
        return len(self.channels)

    def _spec(self, index: int, env_seed: int) -> SamplerSpec:
        return SamplerSpec(
            self._conf_args,
            index,
            self.num_envs,
            env_seed,
            self.config.inference,
            self.first_env_id,
        )

    def _wait_ready(self, indices: list[int]) -> list:
        """Wait until the samplers ``indices`` are built; their descriptions."""
        deadline = time.monotonic() + self.config.start_timeout
        descriptions = {}
        waiting = set(indices)
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                names = ", ".join(str(w) for w in sorted(waiting))
                raise SamplerError(
                    f"sampler(s) {names} did not start within SamplerConfig.start_timeout="
                    f"{self.config.start_timeout:g} s",
                    index=min(waiting),
                )
            channels = [self.channels[w] for w in waiting]
            for channel in self._channel_class.wait(channels, min(left, 1.0)):
                w = channel.spec.index
                if not channel.ready():
                    raise SamplerError(
                        f"sampler {w} (pid {channel.pid}) {channel.exit_description()} while "
                        "starting",
                        index=w,
                    )
                kind, value = channel.receive()
                if kind != "ready":
                    error = self._remote_error(w, value, "while starting")
                    raise SamplerStartError(str(error), w, error.remote_traceback)
                descriptions[w] = value
                waiting.discard(w)
        return [descriptions[w] for w in indices]

    def _remote_error(self, index: int, value: dict, when: str = "") -> SamplerError:
        text = value.get("traceback", "") if isinstance(value, dict) else str(value)
        lines = [line for line in text.strip().splitlines() if line.strip()]
        last = lines[-1] if lines else "an error"
        where = f" {when}" if when else ""
        logger.error("Sampler %d raised%s:\n%s", index, where, text)
        return SamplerError(f"sampler {index} raised{where}: {last}", index, text)

    # -- requests -------------------------------------------------------------------------

    def send(self, index: int, command: str, payload=None) -> None:
        """Send a request to sampler ``index`` (its reply comes from ``wait``)."""
        self._sent_at[index] = time.monotonic()
        self.channels[index].send(command, payload or {})

    def wait(self, indices, timeout: float) -> list[tuple[int, object]]:
        """Replies of the samplers ``indices`` (each with a request outstanding) that came
        within ``timeout`` seconds: ``[(index, reply)]``, ``reply`` being ``REPLACED`` for
        a sampler that died or stayed silent too long and was replaced. Returns as soon as
        there is at least one; an empty list when the timeout passed first."""
        indices = list(indices)
        if not indices:
            return []
        timeout = min(timeout, self._time_to_silence(indices))
        channels = [self.channels[w] for w in indices]
        found = []
        for channel in self._channel_class.wait(channels, max(0.0, timeout)):
            w = channel.spec.index
            if channel.ready():
                try:
                    kind, value = channel.receive()
                except SamplerError:
                    found.append((w, self.replace(w, channel.exit_description())))
                    continue
                if kind != "ok":
                    raise self._remote_error(w, value)
                self._sent_at.pop(w, None)
                found.append((w, value))
            elif not channel.alive():
                found.append((w, self.replace(w, channel.exit_description())))
        if not found:
            found = self._replace_silent(indices)
        return found

    def _time_to_silence(self, indices) -> float:
        now = time.monotonic()
        starts = [self._sent_at.get(w, now) for w in indices]
        return max(0.0, min(starts) + self.config.timeout - now)

    def _replace_silent(self, indices) -> list:
        now, limit = time.monotonic(), self.config.timeout
        silent = [w for w in indices if w in self._sent_at and now - self._sent_at[w] >= limit]
        return [
            (w, self.replace(w, f"was silent for {limit:g} s (SamplerConfig.timeout)"))
            for w in silent
        ]

    def request_all(self, command: str, payload=None) -> list:
        """Send ``command`` to every sampler and wait for all replies (a sampler replaced on
        the way is asked again); the replies in sampler order."""
        replies = {}
        for w in range(self.num_samplers):
            self.send(w, command, payload)
        while len(replies) < self.num_samplers:
            waiting = [w for w in range(self.num_samplers) if w not in replies]
            for w, reply in self.wait(waiting, self.config.timeout):
                if reply is REPLACED:
                    self.send(w, command, payload)
                else:
                    replies[w] = reply
        return [replies[w] for w in range(self.num_samplers)]

    # -- replacement ----------------------------------------------------------------------

    def replace(self, index: int, what: str) -> str:
        """Replace sampler ``index`` (which ``what``: 'died with ...'); returns ``REPLACED``.

        Raises:
            SamplerError: when it was replaced ``max_restarts`` times within
                ``restart_window`` seconds already.
        """
        cfg, old = self.config, self.channels[index]
        now = time.monotonic()
        times = [t for t in self._restart_times[index] if now - t < cfg.restart_window]
        if len(times) >= cfg.max_restarts:
            old.kill()
            raise SamplerError(
                f"sampler {index} (pid {old.pid}) {what}; it was replaced {len(times)} times "
                f"within {cfg.restart_window:g} s, more than SamplerConfig.max_restarts="
                f"{cfg.max_restarts} allows",
                index=index,
            )
        times.append(now)
        self._restart_times[index] = times
        self.num_replacements += 1
        logger.warning(
            "Sampler %d (pid %s) %s: replacing it (replacement #%d); its unfinished unroll is "
            "discarded",
            index,
            old.pid,
            what,
            self.num_replacements,
        )
        old.kill()
        old.close(grace=0.0)
        seed = seeding.derived_seed(self._seed, REPLACEMENT_SALT, index, self.num_replacements)
        self.channels[index] = self._channel_class(self._spec(index, seed))
        self.versions[index] = None
        self._sent_at.pop(index, None)
        self._wait_ready([index])
        return REPLACED

    def close(self) -> None:
        """Stop every sampler (idempotent)."""
        channels, self.channels = self.channels, []
        if channels:
            self._channel_class.close_all(channels)
