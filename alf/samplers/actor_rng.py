"""An actor's own random stream: ``ActorGenerator`` and the seed of sampler ``w``.

Sampled actions draw from torch's global generator. A sampler acting in its own
process draws from its own stream, so for its experience to be reproducible in one
process (the reference the tests compare with) the in-process actor must draw from
the same stream: ``ActorGenerator`` keeps an actor-owned generator state and swaps it
into the global generator around each unroll (save the global state, set the actor's,
act, store the actor's, restore the global one). Nothing else draws from the actor's
stream, and the actor's draws leave the global stream (the learner's) untouched.

The default in-process run uses no ``ActorGenerator``: its actor draws from the
global stream, as it always has (``docs/design.md`` section 5).
"""

from __future__ import annotations

import torch

from alf.utils import seeding

#: the salt of actor seeds (``seeding.derived_seed(seed, ACTOR_SALT, w)``)
ACTOR_SALT = 7_100


def actor_seed(seed: int, sampler_index: int) -> int:
    """The seed of sampler ``sampler_index``'s stream in a run seeded with ``seed`` (also
    after a restart with ``seed``: the restart seed is derived from the run's)."""
    return seeding.derived_seed(seed, ACTOR_SALT, sampler_index)


class ActorGenerator:
    """An actor-owned random stream swapped into torch's global CPU generator.

    ``with generator:`` runs its body drawing from the actor's stream; the global
    generator's state is restored at the exit, and the actor's stream continues where
    the body left it at the next entry.

    Args:
        seed: the run's seed (or a seed derived from it for a replaced sampler).
        index: the actor's index ``w``: its stream starts from ``actor_seed(seed, w)``.
    """

    def __init__(self, seed: int, index: int = 0):
        self.index = index
        self.restart(seed)
        self._saved = None

    def restart(self, seed: int) -> None:
        """Start the stream again from ``actor_seed(seed, index)`` (at an environment
        restart with ``seed``, so a resumed run continues as the uninterrupted one)."""
        stream_seed = actor_seed(seed, self.index)
        self._state = torch.Generator().manual_seed(stream_seed).get_state()

    def get_state(self) -> torch.Tensor:
        return self._state.clone()

    def set_state(self, state: torch.Tensor) -> None:
        self._state = state.clone()

    def __enter__(self) -> ActorGenerator:
        if self._saved is not None:
            raise RuntimeError("ActorGenerator is already entered")
        self._saved = torch.get_rng_state()
        torch.set_rng_state(self._state)
        return self

    def __exit__(self, *exc) -> None:
        self._state = torch.get_rng_state()
        torch.set_rng_state(self._saved)
        self._saved = None
