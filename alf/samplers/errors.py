"""``SamplerError``: a sampler failed for good (it raised, or died or went silent more
often than its restart budget allows); the message names the sampler. It is an
``EnvironmentProcessError``, so the trainer handles it as the failure of an environment
worker (a checkpoint of the last completed iteration first, then one line)."""

from __future__ import annotations

from alf.environments.process_protocol import EnvironmentProcessError


class SamplerError(EnvironmentProcessError):
    """A remote sampler failed; ``index`` is the sampler's index when known.

    Args:
        message: one line naming the sampler and what happened.
        index: the sampler's index.
        remote_traceback: the sampler's traceback text when it raised.
    """

    def __init__(self, message: str, index: int | None = None, remote_traceback: str = ""):
        super().__init__(message, remote_traceback=remote_traceback or None)
        self.index = index


class SamplerStartError(SamplerError, ValueError):
    """A sampler could not start (e.g. the conf names an env that does not exist): a setup
    error, reported by ``alf.bin.train`` as one line with exit status 2 like any bad conf."""
