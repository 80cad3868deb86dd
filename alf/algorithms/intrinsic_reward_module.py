"""``IntrinsicRewardModule``: the part of an ``Agent`` that pays a reward of its own.

An intrinsic reward module (ICM, RND, DIAYN's discriminator) is an ``Algorithm`` that an
``AgentAlgorithm`` (``alf/algorithms/agent.py``) runs beside its RL algorithm, on the
observation the RL algorithm sees, and trains from the same experience:

- ``rollout_step(time_step, state)`` returns ``AlgStep(output=r, state, info)``: ``r``
  ``[B]`` is the *raw* intrinsic reward of arriving at ``time_step`` (row ``t`` holds the
  reward of the transition ``t-1 -> t``, like the extrinsic reward of that row), and
  ``info`` must hold it as ``info.reward`` (it is stored with the experience);
- ``intrinsic_reward(time_step, rollout_info)`` turns the recorded raw rewards of ``[T, B]``
  rows into the reward the RL algorithm is given: here, optionally normalized by running
  statistics (``reward_adapt_speed``) that this call updates from those rows. The agent
  calls it once per batch it preprocesses, on the learner's side (so the statistics are the
  learner's, the same in every layout: in-process, remote samplers, several ranks, whose
  statistics pool, ``alf.utils.normalizers``);
- ``train_step(time_step, state, rollout_info)`` recomputes what its loss needs, with
  gradient, on ``[N, ...]`` rows (the agent calls it once on all ``T * B`` rows: a module
  has no train state), and ``calc_loss(info) -> LossInfo`` gives its loss (``loss``
  ``[T, B]``, averaged over every row, so a module zeroes the rows it must not train on
  itself; or a ``scalar_loss``).

The agent composes the RL algorithm's reward as
``extrinsic_reward_coef * r_ext + intrinsic_reward_coef * intrinsic_reward(...)``.
"""

from __future__ import annotations

import torch

from alf.algorithms.algorithm import Algorithm
from alf.data_structures import StepType
from alf.tensor_specs import TensorSpec
from alf.utils.normalizers import ScalarAdaptiveNormalizer


class IntrinsicRewardModule(Algorithm):
    """Base class of intrinsic reward modules (module doc).

    Args:
        reward_adapt_speed: normalize the intrinsic reward by running statistics that
            follow roughly the last ``T / speed`` of ``T`` rewards seen
            (``alf.utils.normalizers.RunningMeanVar``); None: not normalized.
        reward_zero_mean: the normalization subtracts the running mean (else it only
            divides by the running standard deviation, as in the RND paper).
        clip_value: if > 0, clip the normalized reward to ``[-clip_value, clip_value]``.
        train_state_spec, rollout_state_spec, predict_state_spec, optimizer,
            debug_summaries, name: as ``Algorithm``'s.
    """

    def __init__(
        self,
        reward_adapt_speed: float | None = None,
        reward_zero_mean: bool = True,
        clip_value: float = -1.0,
        train_state_spec=(),
        rollout_state_spec=None,
        predict_state_spec=None,
        optimizer=None,
        debug_summaries: bool = False,
        name: str = "IntrinsicRewardModule",
    ):
        if train_state_spec != ():
            raise ValueError(f"{name}: an intrinsic reward module has no train state")
        super().__init__(
            train_state_spec=(),
            rollout_state_spec=rollout_state_spec,
            predict_state_spec=predict_state_spec,
            optimizer=optimizer,
            debug_summaries=debug_summaries,
            name=name,
        )
        self._reward_normalizer = None
        if reward_adapt_speed is not None:
            self._reward_normalizer = ScalarAdaptiveNormalizer(
                TensorSpec(()), speed=reward_adapt_speed, zero_mean=reward_zero_mean
            )
        self._clip_value = clip_value

    def intrinsic_reward(self, time_step, rollout_info, update_statistics: bool = True):
        """The reward ``[T, B]`` given to the RL algorithm for rows ``[T, B]`` whose
        ``rollout_step`` recorded ``rollout_info.reward`` (module doc).

        Args:
            time_step: the rows' time steps ``[T, B, ...]``.
            rollout_info: what ``rollout_step`` recorded, ``[T, B, ...]``.
            update_statistics: merge these rewards into the normalizer first.
        """
        reward = rollout_info.reward
        if self._reward_normalizer is None:
            return reward
        if update_statistics:
            valid = self.rewarded_rows(time_step)
            self._reward_normalizer.update(reward if valid is None else reward[valid])
        reward = self._reward_normalizer.normalize(reward)
        if self._clip_value > 0:
            reward = reward.clamp(-self._clip_value, self._clip_value)
        return reward

    def rewarded_rows(self, time_step):
        """A ``[T, B]`` mask of the rows whose reward means something (their rewards
        alone update the statistics), or None for all."""
        del time_step
        return None

    def after_update(self, experience, train_info) -> None:
        """Hook after each gradient step (the agent calls it with this module's info)."""

    def after_train_iter(self, experience, train_info=None) -> None:
        """Hook at the end of each training iteration."""


def mask_first(loss: torch.Tensor, step_type: torch.Tensor) -> torch.Tensor:
    """``loss`` with the rows of FIRST steps set to 0 (their predecessor belongs to
    another episode)."""
    return loss * (step_type != StepType.FIRST).to(loss.dtype)
