"""``alf.utils.losses.quantile_huber_loss``: its values are the plain formula's bit for bit,
and its written-out gradient is autograd's gradient of that formula."""

import pytest
import torch

from alf.utils.losses import quantile_huber_loss


def plain(pred, target, tau, kappa=1.0, sum_over_quantiles=False, target_weights=None):
    """The loss term by term, left to autograd."""
    u = target.detach().unsqueeze(-2) - pred.unsqueeze(-1)
    abs_u = u.abs()
    if kappa > 0:
        huber = torch.where(abs_u <= kappa, 0.5 * u * u, kappa * (abs_u - 0.5 * kappa)) / kappa
    else:
        huber = abs_u
    loss = (tau.unsqueeze(-1) - (u.detach() < 0).to(u.dtype)).abs() * huber
    if target_weights is None:
        loss = loss.mean(-1)
    else:
        loss = (loss * target_weights.unsqueeze(-2)).sum(-1)
    return loss.sum(-1) if sum_over_quantiles else loss.mean(-1)


#: (pred, target, tau) shapes: QR-DQN, TQC's pooled critics, IQN's sampled fractions, and
#: a target broadcast over the batch
SHAPES = [
    ((64, 10), (64, 10), (10,)),
    ((1, 32, 2, 25), (1, 32, 1, 46), (25,)),
    ((5, 3, 8), (5, 1, 7), (5, 3, 8)),
    ((4, 8), (1, 6), (8,)),
]


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("kappa", [1.0, 0.0, 0.5, 2.0])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_are_the_formulas_and_the_gradient_autograds(shapes, kappa, weighted, dtype):
    gen = torch.Generator().manual_seed(7)
    pred_shape, target_shape, tau_shape = shapes
    pred = (2 * torch.randn(pred_shape, generator=gen, dtype=dtype)).requires_grad_()
    target = 2 * torch.randn(target_shape, generator=gen, dtype=dtype)
    tau = torch.rand(tau_shape, generator=gen, dtype=dtype)
    weights = torch.randn(target_shape, generator=gen, dtype=dtype).softmax(-1)
    weights = weights if weighted else None
    for total in (False, True):
        expected = plain(pred, target, tau, kappa, total, weights)
        got = quantile_huber_loss(pred, target, tau, kappa, total, weights)
        assert got.shape == expected.shape == pred_shape[:-1]
        assert torch.equal(got, expected)
        grad_out = torch.randn(got.shape, generator=gen, dtype=dtype)
        (want,) = torch.autograd.grad(expected, pred, grad_out)
        (have,) = torch.autograd.grad(got, pred, grad_out)
        tol = 1e-6 if dtype == torch.float32 else 1e-13
        torch.testing.assert_close(have, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("kappa", [1.0, 0.7, 0.0])
def test_gradient_against_finite_differences(kappa):
    gen = torch.Generator().manual_seed(3)
    pred = torch.randn(3, 2, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    target = torch.randn(3, 1, 6, generator=gen, dtype=torch.float64)
    tau = torch.rand(5, generator=gen, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda p: quantile_huber_loss(p, target, tau, kappa), (pred,))


def test_a_hand_expanded_value_and_gradient():
    # one prediction 0 at tau = 0.25 against targets 2 and -0.5 (kappa 1):
    # u = 2: |0.25 - 0| * (2 - 0.5) = 0.375; u = -0.5: |0.25 - 1| * 0.125 = 0.09375
    pred = torch.zeros(1, requires_grad=True)
    loss = quantile_huber_loss(pred, torch.tensor([2.0, -0.5]), torch.tensor([0.25]))
    assert loss.item() == (0.375 + 0.09375) / 2
    loss.backward()
    # d/dpred = -(0.25 * clamp(2) + 0.75 * clamp(-0.5)) / 2 = -(0.25 - 0.375) / 2
    assert pred.grad.item() == 0.0625


def test_no_gradient_reaches_the_target_and_a_negative_kappa_is_refused():
    pred = torch.randn(4, 3, requires_grad=True)
    target = torch.randn(4, 5, requires_grad=True)
    quantile_huber_loss(pred, target, torch.rand(3)).sum().backward()
    assert target.grad is None and pred.grad is not None
    with pytest.raises(ValueError, match="kappa must be >= 0"):
        quantile_huber_loss(pred, target, torch.rand(3), kappa=-1.0)
