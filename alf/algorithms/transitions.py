"""Training on transitions: pairs of consecutive rows of a ``[T, B]`` minibatch.

The off-policy algorithms that learn from one-step transitions (SAC, DDPG, TD3)
sample sequences of ``T >= 2`` steps from the replay buffer and treat every row
``t < T-1`` as the transition :math:`(s_t, a_t, r_{t+1}, s_{t+1})`. They compute on
rows ``:-1`` (the states and actions) and ``1:`` (the next states) flattened to
``[(T-1) * B, ...]`` (``flat_rows``), give ``calc_loss`` per-row terms padded back to
``[T, B]`` (``value_ops.pad_last`` for terms of row ``t``, ``value_ops.pad_first`` for
bootstrap values of row ``t + 1``), and leave the last row out of the loss
(``TransitionMask``): it has no successor in the minibatch. DQN's n-step sequences use
the same row helpers for their bootstrap rows.

The ``TrainerConfig`` checks such training needs are here too.
"""

from __future__ import annotations

import torch

import alf.nest as nest


def flat_rows(x, start: int | None, stop: int | None):
    """Rows ``start:stop`` of a ``[T, B, ...]`` tensor or nest, flattened to ``[N, ...]``."""
    if isinstance(x, torch.Tensor):
        return x[start:stop].flatten(0, 1)
    return nest.map_structure(lambda y: y[start:stop].flatten(0, 1), x)


class TransitionMask:
    """The ``[T, B]`` bool mask of the rows trained as transitions: all but the last.

    The all-but-last mask of a shape and device is built once and reused (an
    algorithm's minibatches mostly have one shape).
    """

    def __init__(self):
        self._cache = {}

    def __call__(self, step_type: torch.Tensor, valid_masks=None) -> torch.Tensor:
        """The mask for ``step_type`` ``[T, B]``, and-ed with ``valid_masks`` when given.

        Args:
            step_type: ``[T, B]`` step types of the minibatch (only the shape and the
                device are used).
            valid_masks: optional ``[T, B]`` bool or 0/1 mask of further valid rows.

        Returns:
            ``[T, B]`` bool: False on the last row and where ``valid_masks`` is 0.
        """
        key = (tuple(step_type.shape), step_type.device)
        mask = self._cache.get(key)
        if mask is None:
            mask = torch.ones(step_type.shape, dtype=torch.bool, device=step_type.device)
            mask[-1] = False
            self._cache[key] = mask
        if valid_masks is not None:
            mask = mask & valid_masks.bool()
        return mask


def check_sampled_training(config, name: str) -> None:
    """Raise ``ValueError`` if ``config`` trains on the whole replay buffer instead of
    sampling transitions from it (nothing to check without a config)."""
    if config is not None and config.whole_replay_buffer_training:
        raise ValueError(
            f"{name} samples transitions from the replay buffer: set TrainerConfig."
            "whole_replay_buffer_training=False (and clear_replay_buffer=False)"
        )


def check_transition_length(config, name: str) -> None:
    """Raise ``ValueError`` if the sequences ``config`` trains on are shorter than the
    two rows of a transition (``mini_batch_length``, else ``unroll_length``)."""
    if config is None:
        return
    length = config.mini_batch_length or config.unroll_length
    if length < 2:
        raise ValueError(
            f"{name} trains on transitions: TrainerConfig.mini_batch_length must be >= 2 "
            f"(got {length})"
        )
