"""Minibatches of time-major ``[T, B]`` experience for the training iteration.

``split_sequences`` cuts an unroll into equal pieces, ``shuffled_mini_batches``
draws one epoch of minibatches of them, ``split_batch`` cuts a sampled batch into
the parts of consecutive updates, and ``sample_weights`` reads the importance
weights of prioritized replay. Minibatches of whole episode segments (recurrent
policies) are in ``trajectory_batching``.
"""

from __future__ import annotations

import torch

import alf.nest as nest
from alf.data_structures import BatchInfo, Experience


def sample_weights(experience: Experience) -> torch.Tensor | None:
    """``[T, B]`` importance weights of replayed ``[T, B]`` experience, or None."""
    batch_info = experience.batch_info
    if not isinstance(batch_info, BatchInfo) or not torch.is_tensor(batch_info.importance_weights):
        return None
    num_steps = experience.time_step.step_type.shape[0]
    weights = batch_info.importance_weights
    return weights.unsqueeze(0).expand(num_steps, *weights.shape)


def split_batch(experience: Experience, batch_info, num_parts: int, part_size: int):
    """``num_parts`` consecutive pieces ``[T, part_size]`` of sampled ``experience``
    ``[T, num_parts * part_size]`` with their ``batch_info`` ``[part_size]`` (the
    whole as is when there is one piece)."""
    if num_parts == 1:
        yield experience, batch_info
        return
    for i in range(num_parts):
        part = slice(i * part_size, (i + 1) * part_size)
        yield (
            nest.map_structure(lambda x, s=part: x[:, s], experience),
            nest.map_structure(lambda x, s=part: x[s], batch_info),
        )


def shuffled_mini_batches(sequences: Experience, mini_batch_size: int | None):
    """One epoch over ``sequences`` ``[L, N]``: minibatches ``[L, mini_batch_size]``
    of a random permutation of the ``N`` sequences (the last one may be smaller).

    When one minibatch holds all ``N`` sequences it is ``sequences`` itself: the
    loss is a mean over the minibatch, which no permutation of its rows changes,
    so drawing and applying one would only cost time.
    """
    num_sequences = nest.get_nest_batch_size(sequences, dim=1)
    mini_batch_size = mini_batch_size or num_sequences
    if mini_batch_size >= num_sequences:
        yield sequences
        return
    leaves, treespec = nest.flatten_with_spec(sequences)
    perm = torch.randperm(num_sequences)
    for start in range(0, num_sequences, mini_batch_size):
        index = perm[start : start + mini_batch_size]
        yield nest.unflatten(treespec, [x.index_select(1, index) for x in leaves])


def split_sequences(experience: Experience, length: int | None) -> Experience:
    """``[T, B]`` → ``[L, (T / L) * B]``: consecutive ``L``-step pieces of every env."""
    num_steps, batch_size = experience.time_step.step_type.shape[:2]
    length = length or num_steps
    if num_steps % length:
        raise ValueError(
            f"TrainerConfig.mini_batch_length ({length}) must divide the number of steps "
            f"per env used for whole-buffer training ({num_steps})"
        )
    pieces = num_steps // length

    def _split(x):
        x = x.reshape(pieces, length, batch_size, *x.shape[2:])
        return x.transpose(0, 1).reshape(length, pieces * batch_size, *x.shape[3:])

    return nest.map_structure(_split, experience)
