r"""Quantile-regression TD losses: ``quantile_huber_loss``, ``TDQRLoss``, ``OneStepTDQRLoss``.

Dabney et al. 2018, "Distributional Reinforcement Learning with Quantile Regression"
(QR-DQN, arXiv:1710.10044). A distributional critic predicts ``N`` quantiles
:math:`\theta_1..\theta_N` of the return :math:`Z(s, a)` at the fractions
:math:`\hat\tau_i = (2i - 1) / 2N` (the midpoints of ``N`` equal bins); the target
distribution is given by ``N'`` samples :math:`y_j` (e.g.
:math:`r + \gamma d\, \theta'_j(s', a')`), equally likely or with weights :math:`w_j`.
The loss (eq. 10 of the paper) is

.. math::

    \mathcal L = \sum_{i=1}^{N} \frac{1}{N'} \sum_{j=1}^{N'}
        \rho^\kappa_{\hat\tau_i}(y_j - \theta_i), \qquad
    \rho^\kappa_\tau(u) = |\tau - \mathbb 1\{u < 0\}|\, \frac{L_\kappa(u)}{\kappa}, \qquad
    L_\kappa(u) = \begin{cases} u^2 / 2 & |u| \le \kappa \\
                                \kappa (|u| - \kappa / 2) & \text{otherwise} \end{cases}

and with :math:`\kappa = 0` the plain quantile (pinball) loss
:math:`|\tau - \mathbb 1\{u<0\}|\,|u|` (the limit of the above). At the default
:math:`\kappa = 1` this is exactly ALF's ``iqn_huber_loss`` and sb3-contrib's
``quantile_huber_loss``, which leave out the division by κ. ``sum_over_quantiles=False``
(ALF's and sb3-contrib's default) takes the mean over ``i`` instead of the sum.

With sampled fractions (IQN, Dabney et al. 2018b, arXiv:1806.06923, used by DSAC) the
predicted quantiles are at given :math:`\hat\tau_i` and the target samples carry the
probability widths :math:`w_j = \Delta\tau'_j` of theirs: the mean over ``j`` becomes
:math:`\sum_j w_j \rho(\cdot)` (ALF weights by :math:`w_j` and still takes the mean, a
constant factor :math:`1/N'` apart).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

import alf
from alf.algorithms.td_loss import TDLoss, TDLossInfo
from alf.configuration.argtypes import Count, Discount, NonNegativeFloat
from alf.data_structures import LossInfo, StepType
from alf.utils import value_ops


def quantile_midpoints(num_quantiles: int, device=None, dtype=torch.float32) -> torch.Tensor:
    r""":math:`\hat\tau_i = (2i + 1) / 2N`, ``i = 0..N-1`` ``[N]``."""
    return (torch.arange(num_quantiles, device=device, dtype=dtype) + 0.5) / num_quantiles


def quantile_huber_loss(
    pred: torch.Tensor,
    target: torch.Tensor,
    tau: torch.Tensor,
    kappa: float = 1.0,
    sum_over_quantiles: bool = False,
    target_weights: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""The quantile-regression Huber loss of QR-DQN (module docstring), per leading index.

    Args:
        pred: the predicted quantiles :math:`\theta_i` ``[..., N]`` (gradient flows here).
        target: the target samples :math:`y_j` ``[..., N']`` (detached here); its leading
            dims broadcast with ``pred``'s (e.g. ``pred [B, R, N]``, ``target [B, 1, N']``).
        tau: the fractions of ``pred``'s quantiles, broadcastable to ``pred``: ``[N]``
            (e.g. ``quantile_midpoints(N)``) or sampled ``[..., N]``.
        kappa: the Huber threshold κ ≥ 0; 0 gives the plain quantile loss.
        sum_over_quantiles: sum over the ``N`` predicted quantiles (the paper) instead of
            the mean.
        target_weights: None: the targets are equally likely (mean over ``N'``); else
            their probabilities ``[..., N']`` (broadcastable with ``target``), and the
            loss is :math:`\sum_j w_j \rho(y_j - \theta_i)`.

    Returns:
        ``[...]``: the broadcast leading dims of ``pred`` and ``target``.
    """
    u = target.detach().unsqueeze(-2) - pred.unsqueeze(-1)  # [..., N, N']
    abs_u = u.abs()
    if kappa > 0:
        huber = torch.where(abs_u <= kappa, 0.5 * u * u, kappa * (abs_u - 0.5 * kappa)) / kappa
    else:
        huber = abs_u
    indicator = (u.detach() < 0).to(u.dtype)
    loss = (tau.unsqueeze(-1) - indicator).abs() * huber
    if target_weights is None:
        loss = loss.mean(-1)
    else:
        loss = (loss * target_weights.unsqueeze(-2)).sum(-1)
    return loss.sum(-1) if sum_over_quantiles else loss.mean(-1)


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
