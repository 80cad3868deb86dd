"""``EnvStratifiedShuffle``: minibatches that are the same whatever the learner ranks.

With ``K`` data-parallel learner ranks each rank holds ``1/K`` of the envs and cuts its
own minibatches of ``M/K`` sequences; the ranks' gradients are averaged, so a global
minibatch is the union of the ranks' ones. For the ranks to train on the minibatches one
process would cut from all ``B`` envs, the permutation cannot be a draw over all ``N``
sequences (a rank sees only its own): instead every minibatch holds the same number of
pieces, ``k = M / B``, from every env, and env ``g``'s pieces are taken in the order of
a permutation drawn from its own counter-based stream (``alf.utils.random_streams``,
keyed by the run's seed, the training iteration, the epoch and ``g``). The union of the
ranks' minibatch ``m`` is then exactly the one-process minibatch ``m``, for any ``K``
that divides ``B`` (only the order of the rows, and so the sum of the gradients,
differs).

Every minibatch holding ``k`` pieces of every env is a stratified draw: each env is
represented equally, which is at least as good an estimate of the epoch's gradient as
a uniform permutation. It needs ``M`` to be a multiple of ``B`` and the ``P`` pieces of
an env to be a multiple of ``k``; otherwise the learner shuffles uniformly as before
(``torch.randperm`` on this rank's generator), and ``K`` ranks then train on other
minibatches than one process.
"""

from __future__ import annotations

import torch

from alf.utils import seeding
from alf.utils.random_streams import ActingStreams
from alf.utils.training_progress import current_progress

#: the salt of the shuffle streams' seed (``seeding.derived_seed(seed, SALT, iteration)``)
SHUFFLE_SALT = 7_300


class EnvStratifiedShuffle:
    """The permutations of ``EnvStratifiedShuffle`` (see the module doc).

    Args:
        seed: the run's seed (the same on every rank).
        first_env_id: the run-wide index of this learner's first env.
    """

    def __init__(self, seed: int, first_env_id: int = 0):
        self._seed = int(seed)
        self._first_env_id = int(first_env_id)
        self._iteration = None
        self._streams = None

    def _streams_of(self, num_envs: int) -> ActingStreams:
        """This iteration's streams (one step per epoch), new at each iteration."""
        iteration = current_progress().iterations
        if self._iteration != iteration or self._streams.batch_size != num_envs:
            seed = seeding.derived_seed(self._seed, SHUFFLE_SALT, iteration)
            ids = range(self._first_env_id, self._first_env_id + num_envs)
            self._streams = ActingStreams(seed, list(ids), "shuffle")
            self._iteration = iteration
        return self._streams

    def permutation(
        self, num_sequences: int, num_envs: int, mini_batch_size: int
    ) -> torch.Tensor | None:
        """One epoch's order of the ``num_sequences`` sequences (piece-major: sequence
        ``p * num_envs + b`` is piece ``p`` of env ``b``), in which every run of
        ``mini_batch_size`` holds ``k = mini_batch_size / num_envs`` pieces of each env
        in env order; None when the sizes do not allow it (the caller shuffles
        uniformly)."""
        if num_envs <= 0 or num_sequences % num_envs or mini_batch_size % num_envs:
            return None
        pieces, k = num_sequences // num_envs, mini_batch_size // num_envs
        if k == 0 or pieces % k:
            return None
        streams = self._streams_of(num_envs)
        with torch.inference_mode(), streams.drawing():
            order = torch.rand(num_envs, pieces, dtype=torch.float64).argsort(dim=1)
        envs = torch.arange(num_envs).unsqueeze(1)
        index = order * num_envs + envs  # [B, P]: env b's pieces in its drawn order
        return index.reshape(num_envs, pieces // k, k).transpose(0, 1).reshape(-1).clone()
