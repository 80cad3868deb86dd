"""The quantile-regression Huber loss and TDQRLoss against hand expansions."""

from __future__ import annotations

import pytest
import torch

from alf.algorithms.one_step_loss import OneStepTDQRLoss as AlfPathOneStepTDQRLoss
from alf.algorithms.quantile_td_loss import (
    OneStepTDQRLoss,
    TDQRLoss,
    quantile_huber_loss,
    quantile_midpoints,
)
from alf.algorithms.td_loss import TDQRLoss as AlfPathTDQRLoss
from alf.data_structures import StepType

# Two quantiles θ = (0, 1) at τ̂ = (1/4, 3/4), two targets y = (0.5, 3): u_ij = y_j − θ_i is
# (0.5, 3) for i = 0 and (−0.5, 2) for i = 1.
PRED = torch.tensor([0.0, 1.0])
TARGET = torch.tensor([0.5, 3.0])


def _rho(u, tau, kappa):
    """ρ^κ_τ(u) of one pair, written out."""
    weight = abs(tau - (1.0 if u < 0 else 0.0))
    if kappa == 0:
        return weight * abs(u)
    huber = 0.5 * u * u if abs(u) <= kappa else kappa * (abs(u) - 0.5 * kappa)
    return weight * huber / kappa


@pytest.mark.parametrize("kappa", [0.0, 1.0, 2.0])
@pytest.mark.parametrize("sum_over_quantiles", [False, True])
def test_quantile_huber_loss_by_hand(kappa, sum_over_quantiles):
    tau = quantile_midpoints(2)
    assert torch.equal(tau, torch.tensor([0.25, 0.75]))
    per_quantile = [
        sum(_rho(float(y - PRED[i]), float(tau[i]), kappa) for y in TARGET) / 2 for i in range(2)
    ]
    expected = sum(per_quantile) if sum_over_quantiles else sum(per_quantile) / 2
    loss = quantile_huber_loss(PRED, TARGET, tau, kappa, sum_over_quantiles)
    assert loss.shape == ()
    torch.testing.assert_close(loss, torch.tensor(expected))


def test_quantile_huber_loss_numbers():
    """The same, as numbers: κ = 1: i = 0: (0.25·0.125 + 0.25·2.5)/2, i = 1: (0.25·0.125 +
    0.75·1.5)/2; κ = 0: (0.25·0.5 + 0.25·3)/2 and (0.25·0.5 + 0.75·2)/2."""
    tau = quantile_midpoints(2)
    torch.testing.assert_close(quantile_huber_loss(PRED, TARGET, tau), torch.tensor(0.453125))
    torch.testing.assert_close(quantile_huber_loss(PRED, TARGET, tau, 0.0), torch.tensor(0.625))
    weighted = quantile_huber_loss(PRED, TARGET, tau, target_weights=torch.tensor([0.2, 0.8]))
    # i = 0: 0.2·0.03125 + 0.8·0.625; i = 1: 0.2·0.03125 + 0.8·1.125; mean
    torch.testing.assert_close(weighted, torch.tensor((0.50625 + 0.90625) / 2))


def test_quantile_huber_loss_gradient_is_the_quantile_gradient():
    """With κ → 0 (and far targets for κ = 1) ∂L/∂θ_i = mean_j (1{y_j < θ_i} − τ_i): the
    gradient of quantile regression, 0 in expectation exactly at the τ-quantile."""
    pred = torch.tensor([0.0, 1.0], requires_grad=True)
    targets = torch.tensor([-5.0, 0.5, 5.0, 6.0])
    tau = quantile_midpoints(2)
    quantile_huber_loss(pred, targets, tau, kappa=0.0, sum_over_quantiles=True).backward()
    below = (targets[None, :] < pred.detach()[:, None]).float().mean(-1)
    torch.testing.assert_close(pred.grad, below - tau)


def test_quantile_huber_loss_broadcasts_critics_and_matches_sb3_contrib():
    """[B, R, N] against [B, 1, N'] (TQC's shapes) equals sb3-contrib's loss (its mean)."""
    sb3_utils = pytest.importorskip("sb3_contrib.common.utils")
    g = torch.Generator().manual_seed(0)
    pred = torch.randn(5, 3, 4, generator=g)
    target = torch.randn(5, 1, 7, generator=g) * 2
    ours = quantile_huber_loss(pred, target, quantile_midpoints(4))
    assert ours.shape == (5, 3)
    theirs = sb3_utils.quantile_huber_loss(pred, target, sum_over_quantiles=False)
    torch.testing.assert_close(ours.mean(), theirs)
    qr_dqn = quantile_huber_loss(pred[:, 0], target[:, 0], quantile_midpoints(4), 1.0, True)
    torch.testing.assert_close(
        qr_dqn.mean(), sb3_utils.quantile_huber_loss(pred[:, 0], target[:, 0])
    )


def _batch():
    """[T=3, B=2]: column 1's row 1 is a terminal LAST (discount 0)."""
    mid, last = int(StepType.MID), int(StepType.LAST)
    step_type = torch.tensor([[mid, mid], [mid, last], [mid, int(StepType.FIRST)]])
    discount = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    reward = torch.tensor([[0.0, 0.0], [1.0, 2.0], [-1.0, 0.5]])
    g = torch.Generator().manual_seed(1)
    value = torch.randn(3, 2, 2, 4, generator=g)  # [T, B, R=2, N=4]
    target_value = torch.randn(3, 2, 5, generator=g)  # [T, B, N'=5]
    return reward, step_type, discount, value, target_value


@pytest.mark.parametrize("td_lambda", [0, 1])
def test_td_qr_loss_by_hand(td_lambda):
    gamma = 0.9
    reward, step_type, discount, value, target_value = _batch()
    loss_fn = TDQRLoss(num_quantiles=4, gamma=gamma, td_lambda=td_lambda)
    info = loss_fn(reward, step_type, discount, value, target_value)
    tau = quantile_midpoints(4)
    y10 = reward[2, 0] + gamma * target_value[2, 0]  # row 1, column 0
    y00 = reward[1, 0] + gamma * (target_value[1, 0] if td_lambda == 0 else y10)
    y01 = torch.full((5,), 2.0)  # terminal: no bootstrap
    expected = torch.zeros(3, 2)
    for (t, b), y in (((0, 0), y00), ((1, 0), y10), ((0, 1), y01)):
        expected[t, b] = sum(quantile_huber_loss(value[t, b, r], y, tau) for r in range(2))
    # (1, 1) is LAST: no transition; row 2 is the last row
    torch.testing.assert_close(info.loss, expected)
    torch.testing.assert_close(info.extra.target[0, 0], y00)
    td_error = y00.mean() - value[0, 0].mean(-1)
    torch.testing.assert_close(info.extra.td_error[0, 0], td_error)
    assert info.extra.td_error.shape == (3, 2, 2)


def test_td_qr_loss_one_critic_and_fractions():
    """One critic ``[T, B, N]``; with IQN's fractions and target probabilities."""
    reward, step_type, discount, value, target_value = _batch()
    value = value[:, :, 0]
    target_value = target_value[..., :4]
    loss_fn = OneStepTDQRLoss(num_quantiles=4, gamma=0.5, delta=0.5, sum_over_quantiles=True)
    tau_hat = torch.rand(3, 2, 4)
    weights = torch.softmax(torch.randn(3, 2, 4), -1)
    info = loss_fn(
        reward, step_type, discount, value, target_value, tau_hat=tau_hat, next_delta_tau=weights
    )
    y = reward[1, 0] + 0.5 * target_value[1, 0]
    expected = quantile_huber_loss(value[0, 0], y, tau_hat[0, 0], 0.5, True, weights[1, 0])
    torch.testing.assert_close(info.loss[0, 0], expected)
    assert info.extra.td_error.shape == (3, 2, 1)


def test_td_qr_loss_alf_paths_and_checks():
    assert AlfPathTDQRLoss is TDQRLoss and AlfPathOneStepTDQRLoss is OneStepTDQRLoss
    with pytest.raises(ValueError, match="td_lambda"):
        TDQRLoss(td_lambda=0.5)
    reward, step_type, discount, value, target_value = _batch()
    with pytest.raises(ValueError, match="num_quantiles"):
        TDQRLoss(num_quantiles=50)(reward, step_type, discount, value, target_value)
