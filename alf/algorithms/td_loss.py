r"""``TDLoss`` / ``OneStepTDLoss``: temporal-difference losses for critics.

On time-major ``[T, B]`` sequences (``T >= 2``) the target of row ``t`` is the
TD(λ) return built from rows ``t+1..T-1`` with the *target* values (no gradient):

.. math::

    y_t = r_{t+1} + \gamma\, d_{t+1} \big((1-\lambda) Q'_{t+1} + \lambda\, y_{t+1}\big),
    \qquad y_{T-1} = Q'_{T-1}

(``OneStepTDLoss``: λ = 0, :math:`y_t = r_{t+1} + \gamma d_{t+1} Q'_{t+1}`.)
``TimeStep.discount`` :math:`d` carries the episode ending: 0 after a real
termination, so the target does not bootstrap; 1 at a time limit, so it does.
At a LAST row there is no transition to the next row (auto reset), so the loss
there is 0; the last row of a sequence has no successor and its loss is 0 too.
The loss is ``td_error_loss_fn(y, Q)`` ``[T, B]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

import alf
from alf.algorithms.actor_critic_loss import element_wise_squared_loss
from alf.configuration.argtypes import Count, Discount, NonNegativeFloat, Probability
from alf.data_structures import LossInfo, StepType
from alf.utils import value_ops
from alf.utils.losses import quantile_huber_loss


class TDLossInfo(NamedTuple):
    """Diagnostics: the TD target ``[T, B]`` and the TD error ``[T, B]``."""

    target: object = ()
    td_error: object = ()


@alf.configurable
class TDLoss:
    """TD(λ) critic loss.

    Args:
        gamma: discount factor (multiplies ``TimeStep.discount``).
        td_error_loss_fn: ``(target, prediction) -> loss`` elementwise.
        td_lambda: λ; 0 gives the one-step target.
        name: name in summaries.
    """

    def __init__(
        self,
        gamma: Discount = 0.99,
        td_error_loss_fn: Callable = element_wise_squared_loss,
        td_lambda: Probability = 0.95,
        name: str = "TDLoss",
    ):
        self._gamma = gamma
        self._td_error_loss_fn = td_error_loss_fn
        self._lambda = td_lambda
        self._name = name

    @property
    def gamma(self) -> float:
        return self._gamma

    @property
    def td_lambda(self) -> float:
        return self._lambda

    def compute_targets(self, reward, step_type, discount, target_value) -> torch.Tensor:
        """TD(λ) targets ``[T-1, B, ...]`` from ``[T, B]`` rows (no gradient)."""
        with torch.no_grad():
            discounts = discount * self._gamma
            if self._lambda == 0:
                return value_ops.one_step_discounted_return(
                    reward, target_value, step_type, discounts
                )
            return value_ops.td_lambda(
                reward, target_value, step_type, discounts, td_lambda=self._lambda
            )

    def __call__(
        self, reward, step_type, discount, value, target_value, discounted_return=()
    ) -> LossInfo:
        """Loss ``[T, B]`` of ``value`` ``[T, B, ...]`` against targets from ``target_value``.

        Args:
            reward, step_type, discount: ``[T, B]`` from the experience's time steps.
            value: the critic's prediction ``[T, B]`` (or ``[T, B, k]`` for several
                critics, all regressed to the same target).
            target_value: the target network's value ``[T, B]`` (or broadcastable).
            discounted_return: ``[T, B]`` episodic returns of the replayed steps, or
                ``()``: unused here (``LowerBoundedTDLoss`` bounds its targets by them).
        """
        targets = self.compute_targets(reward, step_type, discount, target_value)
        return self._loss_info(targets, step_type, value)

    def _loss_info(self, targets, step_type, value, trained_rows=None) -> LossInfo:
        """The loss of ``value`` against ``targets`` ``[T-1, B]`` on the rows that are not
        LAST (and ``trained_rows`` ``[T-1, B]`` when given)."""
        if value.ndim > targets.ndim:
            targets = targets.unsqueeze(-1).expand(*targets.shape, value.shape[-1])
        loss = self._td_error_loss_fn(targets, value[:-1])
        not_last = step_type[:-1] != StepType.LAST
        if trained_rows is not None:
            not_last = not_last & trained_rows
        not_last = not_last.to(loss.dtype)
        if loss.ndim > not_last.ndim:
            not_last = not_last.unsqueeze(-1)
            loss = (loss * not_last).sum(-1)
        else:
            loss = loss * not_last
        loss = value_ops.pad_last(loss)
        td_error = value_ops.pad_last((targets - value[:-1]).detach())
        return LossInfo(
            loss=loss, extra=TDLossInfo(target=value_ops.pad_last(targets), td_error=td_error)
        )


@alf.configurable
class OneStepTDLoss(TDLoss):
    """One-step TD loss: ``y_t = r_{t+1} + γ d_{t+1} Q'_{t+1}``."""

    def __init__(
        self,
        gamma: Discount = 0.99,
        td_error_loss_fn: Callable = element_wise_squared_loss,
        name: str = "OneStepTDLoss",
    ):
        super().__init__(gamma=gamma, td_error_loss_fn=td_error_loss_fn, td_lambda=0.0, name=name)


@alf.configurable
class LowerBoundedTDLoss(TDLoss):
    r"""TD loss whose targets are lower-bounded by known returns (ALF's class).

    With ``lb_target_q`` :math:`= w > 0`, the target :math:`y_t` of every row whose
    episodic return :math:`G^e_t` is known (``ReplayBuffer(record_episodic_return=True)``:
    the discounted return from step ``t`` to the end of its finished episode, passed
    as ``discounted_return``) becomes

    .. math::

        y_t \leftarrow (1 - w)\, y_t + w \max(y_t, G^e_t)

    (rows whose return is ``default_return`` or below, i.e. unknown, keep :math:`y_t`).
    A return actually obtained from ``t`` is a lower bound of the value of the policy
    that obtained it, so of the optimal one: bounding speeds up propagating rare
    rewards (Atari) when the values are still low. Set ``ReplayBuffer.gamma`` to this
    loss's ``gamma`` and ``ReplayBuffer.reward_clip`` to the reward clipping.

    With ``improve_w_nstep_bootstrap`` (needs ``td_lambda=1``), only row 0 is trained,
    towards the largest of its ``n``-step bootstrapped returns
    :math:`G^{(n)}_0 = \sum_{i=1}^{n} (\prod_{j<i} \gamma d_j) r_i
    + (\prod_{j \le n} \gamma d_j) V_n` for ``n = 1 .. T-1`` (with
    ``improve_w_nstep_only``: the larger of :math:`G^{(1)}_0` and :math:`G^{(T-1)}_0`);
    an ``n``-step return does not cross a LAST row (it bootstraps there).

    Args:
        gamma, td_error_loss_fn, td_lambda: as ``TDLoss``.
        normalize_target: ALF's target normalization: not in alf (must be False).
        lb_target_q: the mixing rate :math:`w` in ``[0, 1]`` (0: no bounding).
        default_return: the ``ReplayBuffer.default_return`` marking unknown returns.
        improve_w_goal_return: ALF's bound by the distance to hindsight goals: not in
            alf (must be False); ``reward_multiplier`` and ``positive_reward`` belong
            to it and must keep their defaults.
        improve_w_nstep_bootstrap: bound row 0 by its ``n``-step returns (above).
        improve_w_nstep_only: use only the longest ``n``-step return (above).
        debug_summaries: accepted for ALF's confs.
        name: name in summaries.
    """

    def __init__(
        self,
        gamma: Discount = 0.99,
        td_error_loss_fn: Callable = element_wise_squared_loss,
        td_lambda: Probability = 0.95,
        normalize_target: bool = False,
        lb_target_q: Probability = 0.0,
        default_return: float = -1000.0,
        improve_w_goal_return: bool = False,
        improve_w_nstep_bootstrap: bool = False,
        improve_w_nstep_only: bool = False,
        reward_multiplier: float = 1.0,
        positive_reward: bool = True,
        debug_summaries: bool = False,
        name: str = "LbTDLoss",
    ):
        refused = {
            "normalize_target": normalize_target,
            "improve_w_goal_return": improve_w_goal_return,
            "reward_multiplier": reward_multiplier != 1.0,
            "positive_reward": not positive_reward,
        }
        for arg, set_ in refused.items():
            if set_:
                raise ValueError(f"LowerBoundedTDLoss.{arg}: not supported by alf")
        if improve_w_nstep_bootstrap and td_lambda != 1.0:
            raise ValueError("LowerBoundedTDLoss.improve_w_nstep_bootstrap needs td_lambda=1")
        if improve_w_nstep_only and not improve_w_nstep_bootstrap:
            raise ValueError(
                "LowerBoundedTDLoss.improve_w_nstep_only needs improve_w_nstep_bootstrap"
            )
        if not 0.0 <= lb_target_q <= 1.0:
            raise ValueError(f"LowerBoundedTDLoss.lb_target_q must be in [0, 1], got {lb_target_q}")
        super().__init__(
            gamma=gamma, td_error_loss_fn=td_error_loss_fn, td_lambda=td_lambda, name=name
        )
        self._lb_target_q = float(lb_target_q)
        self._default_return = float(default_return)
        self._nstep = improve_w_nstep_bootstrap
        self._nstep_only = improve_w_nstep_only

    @property
    def bounds_targets(self) -> bool:
        """Whether the targets differ from ``TDLoss``'s (``lb_target_q > 0`` or
        ``improve_w_nstep_bootstrap``)."""
        return self._lb_target_q > 0 or self._nstep

    def __call__(
        self, reward, step_type, discount, value, target_value, discounted_return=()
    ) -> LossInfo:
        """As ``TDLoss.__call__``, with the targets bounded (class doc)."""
        targets = self.compute_targets(reward, step_type, discount, target_value)
        trained_rows = None
        if self._nstep:
            targets = targets.clone()
            targets[0] = self._nstep_target(reward, step_type, discount, target_value)
            targets[1:] = 0
            trained_rows = torch.zeros_like(targets, dtype=torch.bool)
            trained_rows[0] = True
        if self._lb_target_q > 0 and torch.is_tensor(discounted_return):
            targets = self.bound_targets(targets, discounted_return[:-1])
        return self._loss_info(targets, step_type, value, trained_rows)

    def bound_targets(self, targets: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
        """``targets`` ``[T-1, B, ...]`` bounded by the episodic ``returns`` ``[T-1, B]``."""
        returns = returns.to(targets.dtype)
        while returns.ndim < targets.ndim:
            returns = returns.unsqueeze(-1)
        known = returns > self._default_return
        w = self._lb_target_q
        bounded = (1 - w) * targets + w * torch.maximum(targets, returns)
        return torch.where(known, bounded, targets)

    @torch.no_grad()
    def _nstep_target(self, reward, step_type, discount, target_value) -> torch.Tensor:
        """Row 0's target: the largest (or, ``improve_w_nstep_only``, the first and the
        longest) of its ``n``-step bootstrapped returns, ``[B, ...]``."""
        discounts = discount * self._gamma
        num_steps = step_type.shape[0]
        lengths = (1, num_steps - 1) if self._nstep_only else range(1, num_steps)
        returns = [
            value_ops.discounted_return(
                reward[: n + 1], target_value[: n + 1], step_type[: n + 1], discounts[: n + 1]
            )[0]
            for n in lengths
        ]
        return torch.stack(returns).amax(0)


# -- quantile regression (QR-DQN's loss; the maths in ``quantile_td_loss.py``) ------------


def quantile_midpoints(num_quantiles: int, device=None, dtype=torch.float32) -> torch.Tensor:
    r""":math:`\hat\tau_i = (2i + 1) / 2N`, ``i = 0..N-1`` ``[N]``."""
    return (torch.arange(num_quantiles, device=device, dtype=dtype) + 0.5) / num_quantiles


@alf.configurable
class TDQRLoss(TDLoss):
    r"""Temporal-difference quantile-regression loss (ALF's ``TDQRLoss``).

    The target samples of row ``t`` are the ``N'`` values of the target distribution
    (``target_value`` ``[T, B, N']``) backed up through the rewards and discounts,
    sample by sample, :math:`y_{t,j} = r_{t+1} + \gamma d_{t+1} y'_{t+1,j}` (one step,
    ``td_lambda=0``) or the discounted return to the last row (``td_lambda=1``, from
    the last row's samples). Every critic's ``N`` quantiles are regressed to them
    with ``quantile_huber_loss``; the losses of several critics are summed (as
    ``TDLoss`` sums its critics' squared errors). As ``TDLoss``, the loss is 0 at
    LAST rows and at the last row.

    Args:
        num_quantiles: ``N``, the number of quantiles each critic predicts (the target
            may have any number ``N'`` of samples, e.g. TQC's truncated pool).
        gamma: discount factor (multiplies ``TimeStep.discount``).
        td_error_loss_fn: ``fn(pred, target, tau, kappa, sum_over_quantiles,
            target_weights)``, ``quantile_huber_loss``'s signature.
        td_lambda: 0 (one-step target) or 1 (discounted return); ALF has no TD(λ)
            in between for quantiles either (an element-wise mix of sample vectors
            is not the mixture of the distributions).
        sum_over_quantiles: sum the loss over the predicted quantiles instead of the
            mean (ALF's default: the mean).
        delta: the Huber threshold κ (ALF's ``huber_function``'s ``delta``; 0: the
            plain quantile loss).
        debug_summaries: accepted for ALF's confs; the critic's summaries are the
            algorithm's.
        name: name in summaries.
    """

    def __init__(
        self,
        num_quantiles: Count = 50,
        gamma: Discount = 0.99,
        td_error_loss_fn: Callable = quantile_huber_loss,
        td_lambda: float = 1.0,
        sum_over_quantiles: bool = False,
        delta: NonNegativeFloat = 1.0,
        debug_summaries: bool = False,
        name: str = "TDQRLoss",
    ):
        if td_lambda not in (0, 1):
            raise ValueError(f"{name}: td_lambda must be 0 or 1, got {td_lambda}")
        super().__init__(
            gamma=gamma, td_error_loss_fn=td_error_loss_fn, td_lambda=td_lambda, name=name
        )
        self._num_quantiles = num_quantiles
        self._sum_over_quantiles = sum_over_quantiles
        self._delta = delta
        self._midpoints = {}  # (device, dtype) -> [N]

    @property
    def num_quantiles(self) -> int:
        return self._num_quantiles

    def midpoints(self, device, dtype=torch.float32) -> torch.Tensor:
        r""":math:`\hat\tau` ``[N]`` on ``device`` (cached)."""
        key = (device, dtype)
        if key not in self._midpoints:
            self._midpoints[key] = quantile_midpoints(self._num_quantiles, device, dtype)
        return self._midpoints[key]

    def compute_targets(self, reward, step_type, discount, target_value) -> torch.Tensor:
        """The target samples ``[T-1, B, N']`` from ``target_value`` ``[T, B, N']``."""
        with torch.no_grad():
            reward = reward.reshape(reward.shape + (1,) * (target_value.ndim - reward.ndim))
            discounts = discount * self._gamma
            if self._lambda == 0:
                return value_ops.one_step_discounted_return(
                    reward, target_value, step_type, discounts
                )
            return value_ops.discounted_return(reward, target_value, step_type, discounts)

    def __call__(
        self,
        reward,
        step_type,
        discount,
        value,
        target_value,
        tau_hat=None,
        delta_tau=None,
        next_delta_tau=None,
        discounted_return=(),
    ) -> LossInfo:
        r"""Loss ``[T, B]`` of the quantiles ``value`` against the targets from ``target_value``.

        Args:
            reward, step_type, discount: ``[T, B]``.
            value: the predicted quantiles ``[T, B, N]`` (one critic) or ``[T, B, R, N]``.
            target_value: the target distribution's samples ``[T, B, N']`` (row 0 unused).
            tau_hat: the fractions of ``value``'s quantiles ``[T, B, N]`` (IQN); None: the
                midpoints :math:`(2i+1)/2N`.
            delta_tau: the probability widths of ``value``'s quantiles ``[T, B, N]`` (only
                for the TD error; None: ``1/N`` each).
            next_delta_tau: the probabilities of the target samples ``[T, B, N']`` (IQN;
                row 0 unused); None: equally likely.
            discounted_return: the replay buffer's episodic returns, ignored: a return
                bounds the mean of the return distribution, not each of its quantiles.

        Returns:
            ``LossInfo(loss [T, B], extra=TDLossInfo(target, td_error))``: ``target``
            ``[T, B, N']`` are the target samples, ``td_error`` ``[T, B, R]`` (``R = 1``
            for one critic) the difference of the target's and the critic's means.
        """
        if value.shape[-1] != self._num_quantiles:
            raise ValueError(
                f"{self._name}: {value.shape[-1]} predicted quantiles, num_quantiles is "
                f"{self._num_quantiles}"
            )
        if value.ndim == target_value.ndim:  # one critic: a replica dim of 1
            value = value.unsqueeze(-2)
        targets = self.compute_targets(reward, step_type, discount, target_value)
        pred = value[:-1]
        if tau_hat is None:
            tau = self.midpoints(value.device, value.dtype)
        else:
            tau = tau_hat[:-1].unsqueeze(-2)
        weights = None if next_delta_tau is None else next_delta_tau[1:].unsqueeze(-2)
        loss = self._td_error_loss_fn(
            pred, targets.unsqueeze(-2), tau, self._delta, self._sum_over_quantiles, weights
        )  # [T-1, B, R]
        not_last = (step_type[:-1] != StepType.LAST).to(loss.dtype)
        loss = value_ops.pad_last((loss * not_last.unsqueeze(-1)).sum(-1))
        with torch.no_grad():
            if weights is None:
                target_mean = targets.mean(-1)
            else:
                target_mean = (targets * next_delta_tau[1:]).sum(-1)
            if delta_tau is None:
                value_mean = pred.mean(-1)
            else:
                value_mean = (pred * delta_tau[:-1].unsqueeze(-2)).sum(-1)
            td_error = value_ops.pad_last(target_mean.unsqueeze(-1) - value_mean)
        return LossInfo(
            loss=loss, extra=TDLossInfo(target=value_ops.pad_last(targets), td_error=td_error)
        )


@alf.configurable
class OneStepTDQRLoss(TDQRLoss):
    """``TDQRLoss`` with the one-step target (``td_lambda=0``), ALF's ``OneStepTDQRLoss``."""

    def __init__(
        self,
        num_quantiles: Count = 50,
        gamma: Discount = 0.99,
        td_error_loss_fn: Callable = quantile_huber_loss,
        sum_over_quantiles: bool = False,
        delta: NonNegativeFloat = 1.0,
        debug_summaries: bool = False,
        name: str = "OneStepTDQRLoss",
    ):
        super().__init__(
            num_quantiles=num_quantiles,
            gamma=gamma,
            td_error_loss_fn=td_error_loss_fn,
            td_lambda=0.0,
            sum_over_quantiles=sum_over_quantiles,
            delta=delta,
            debug_summaries=debug_summaries,
            name=name,
        )
