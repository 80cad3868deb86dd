"""Minibatches of whole trajectories, zero-padded to the longest and masked.

``TrainerConfig.trajectory_mini_batches`` trains a recurrent policy on whole episode
segments instead of fixed-length pieces (``mini_batch_length``): each env's row of
the unroll ``[T, B]`` is cut wherever a step is FIRST, so every segment is one
episode (or the part of it inside this unroll), and segments are batched along
dim 1, padded to the longest segment of their minibatch.

**Masking.** A padded step is marked ``StepType.LAST``: every loss term and
statistic already excludes LAST steps (their action was never taken), so padding
never counts — not in the loss mean, the advantage normalization, the ratio
statistics (approx KL, clip fraction), explained variance or the entropy. Padded
steps repeat the segment's last real step rather than zeros, so every value
computed on them stays finite (a zero observation could give a non-finite ratio,
and ``0 * inf`` is NaN); they come after the real steps, so a recurrent network's
outputs on real steps do not depend on them.

**Initial state.** A segment starts either at a FIRST step (where ``train_steps``
resets the state to zeros) or at the first step of the unroll, continuing an
episode from the previous unroll: there it starts from the state stored at rollout
(as ``use_rollout_state`` does), which is what the policy had.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

import alf.nest as nest
from alf.data_structures import Experience, StepType


class Segments(NamedTuple):
    """Padded segments: ``experience`` ``[L_max, N]`` and ``lengths`` ``[N]`` (int64)."""

    experience: Experience
    lengths: torch.Tensor


def episode_segments(experience: Experience) -> Segments:
    """Cut time-major ``experience`` ``[T, B]`` at FIRST steps into ``N`` padded segments.

    Segments are ordered by env, then time. Padded steps (beyond a segment's
    length) repeat its last step, with ``step_type`` LAST (see the module doc).

    Returns:
        ``Segments(experience [L_max, N], lengths [N])``.
    """
    step_type = experience.time_step.step_type
    num_steps, batch_size = step_type.shape[:2]
    starts = (step_type == StepType.FIRST).t().cpu()  # [B, T]
    starts[:, 0] = True
    env_ids, start_times = starts.nonzero(as_tuple=True)  # env-major, then time
    flat_start = env_ids * num_steps + start_times
    flat_end = torch.cat([flat_start[1:], torch.tensor([batch_size * num_steps])])
    flat_end = torch.minimum(flat_end, (env_ids + 1) * num_steps)  # never past the env's row
    lengths = flat_end - flat_start
    offsets = torch.arange(int(lengths.max()))
    times = start_times + torch.minimum(offsets.unsqueeze(1), lengths - 1)  # [L_max, N]
    device = step_type.device
    times, envs = times.to(device), env_ids.to(device).expand_as(times)
    padded = nest.map_structure(lambda x: x[times, envs], experience)
    is_pad = (offsets.unsqueeze(1) >= lengths).to(device)
    padded_type = padded.time_step.step_type.masked_fill(is_pad, int(StepType.LAST))
    padded = padded._replace(time_step=padded.time_step._replace(step_type=padded_type))
    return Segments(padded, lengths)


def trajectory_mini_batches(segments: Segments, mini_batch_size: int | None):
    """One epoch over ``segments`` in random order: minibatches ``[L, mini_batch_size]``
    (the last may hold fewer), each cut to the length ``L`` of its longest segment."""
    num = int(segments.lengths.shape[0])
    mini_batch_size = mini_batch_size or num
    leaves, treespec = nest.flatten_with_spec(segments.experience)
    perm = torch.randperm(num)
    for start in range(0, num, mini_batch_size):
        index = perm[start : start + mini_batch_size]
        length = int(segments.lengths[index].max())
        device_index = index.to(leaves[0].device)
        yield nest.unflatten(treespec, [x[:length].index_select(1, device_index) for x in leaves])
