"""Elementwise loss functions with ALF's names (``alf.utils.losses``).

They are configurables, so a gin conf can name them (``@element_wise_huber_loss``,
``@losses.element_wise_squared_loss``) and a Python conf can import them
(``from alf.utils.losses import element_wise_huber_loss``). Both take
``(target, prediction)`` and return the loss of every element, as ALF's do.
``quantile_huber_loss`` is the distributional critics' loss (QR-DQN, TQC, QRSAC, DSAC),
with its gradient written out.
"""

from __future__ import annotations

import torch

import alf


@alf.configurable(blacklist=["target", "prediction"])
def element_wise_squared_loss(target: torch.Tensor, prediction: torch.Tensor) -> torch.Tensor:
    """``(target - prediction)^2`` elementwise."""
    return (target - prediction) ** 2


@alf.configurable(blacklist=["target", "prediction"])
def element_wise_huber_loss(target: torch.Tensor, prediction: torch.Tensor) -> torch.Tensor:
    """Huber loss with delta 1, elementwise: ``d^2 / 2`` where ``|d| <= 1``, else
    ``|d| - 1/2``, with ``d = target - prediction``."""
    return torch.nn.functional.huber_loss(prediction, target, reduction="none", delta=1.0)


class _QuantileHuber(torch.autograd.Function):
    r"""The quantile Huber loss per predicted quantile, :math:`L_i = \sum_j w_j
    |\tau_i - 1\{u_{ij} < 0\}|\, h_\kappa(u_{ij})` with :math:`u_{ij} = y_j - \theta_i`,
    and its gradient written out.

    The pairwise tensor ``[..., N, N']`` is the whole cost of a distributional critic's
    loss (TQC: 256 × 50 × 46 values a step). Here the forward pass makes 8 passes over
    it (the last 3 in place) and the backward pass 3, a quarter of the time autograd's
    passes and copies take on TQC's shape, using
    :math:`\partial L_i / \partial \theta_i = -\sum_j w_j |\tau_i - 1\{u_{ij} < 0\}|\,
    \mathrm{clamp}(u_{ij}, -\kappa, \kappa) / \kappa` (:math:`\mathrm{sign}(u_{ij})` for
    :math:`\kappa = 0`). The forward values are those of the plain formula, bit for bit.
    """

    @staticmethod
    def forward(ctx, pred, target, tau, kappa, target_weights):
        u = target.unsqueeze(-2) - pred.unsqueeze(-1)  # [..., N, N']
        tau = tau.unsqueeze(-1)
        weight = torch.where(u < 0, 1 - tau, tau)  # |tau - 1{u < 0}|
        loss = u.abs()
        if kappa > 0:  # c (|u| - c / 2) / kappa with c = min(|u|, kappa)
            clipped = loss.clamp(max=kappa)
            loss.sub_(clipped, alpha=0.5).mul_(clipped)
            if kappa != 1:
                loss.div_(kappa)
        loss.mul_(weight)
        ctx.kappa, ctx.pred_shape = kappa, pred.shape
        ctx.save_for_backward(u, weight, target_weights)
        return _reduce_targets(loss, target_weights)

    @staticmethod
    def backward(ctx, grad):
        u, weight, target_weights = ctx.saved_tensors
        kappa = ctx.kappa
        slope = u.clamp(-kappa, kappa) if kappa > 0 else u.sign()
        slope.mul_(weight)
        if kappa > 0 and kappa != 1:
            slope.div_(kappa)
        grad_pred = -_reduce_targets(slope, target_weights) * grad
        return _sum_to_shape(grad_pred, ctx.pred_shape), None, None, None, None


def _reduce_targets(x: torch.Tensor, target_weights) -> torch.Tensor:
    """``[..., N, N']`` → ``[..., N]``: the mean over the targets, or their weighted sum."""
    if target_weights is None:
        return x.mean(-1)
    return (x * target_weights.unsqueeze(-2)).sum(-1)


def _sum_to_shape(x: torch.Tensor, shape) -> torch.Tensor:
    """Sum ``x`` down to ``shape`` (undo a broadcast)."""
    if x.shape == shape:
        return x
    lead = x.ndim - len(shape)
    x = x.sum(tuple(range(lead))) if lead else x
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and x.shape[i] != 1)
    return x.sum(dims, keepdim=True) if dims else x


def quantile_huber_loss(
    pred: torch.Tensor,
    target: torch.Tensor,
    tau: torch.Tensor,
    kappa: float = 1.0,
    sum_over_quantiles: bool = False,
    target_weights: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""The quantile-regression Huber loss of QR-DQN, per leading index:
    :math:`\frac{1}{N'}\sum_j \sum_i |\tau_i - 1\{u_{ij} < 0\}|\, h_\kappa(u_{ij})`
    (mean over ``i`` unless ``sum_over_quantiles``) with :math:`u_{ij} = y_j - \theta_i`
    and :math:`h_\kappa(u) = u^2 / 2\kappa` for :math:`|u| \le \kappa`, else
    :math:`|u| - \kappa / 2`.

    Args:
        pred: the predicted quantiles :math:`\theta_i` ``[..., N]`` (gradient flows here).
        target: the target samples :math:`y_j` ``[..., N']`` (no gradient flows to it);
            its leading dims broadcast with ``pred``'s (e.g. ``pred [B, R, N]``,
            ``target [B, 1, N']``).
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
    if kappa < 0:
        raise ValueError(f"quantile_huber_loss: kappa must be >= 0, got {kappa}")
    weights = None if target_weights is None else target_weights.detach()
    loss = _QuantileHuber.apply(pred, target.detach(), tau.detach(), float(kappa), weights)
    return loss.sum(-1) if sum_over_quantiles else loss.mean(-1)
