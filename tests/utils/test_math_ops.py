"""Numbers of the small math helpers."""

import math

import numpy as np
import pytest
import torch

from alf.utils import math_ops


def test_explained_variance_matches_the_formula():
    g = torch.Generator().manual_seed(0)
    y = torch.randn(100, generator=g)
    ypred = y + 0.5 * torch.randn(100, generator=g)
    expected = 1 - np.var((y - ypred).numpy()) / np.var(y.numpy())
    assert math_ops.explained_variance(ypred, y).item() == pytest.approx(expected, rel=1e-5)
    assert math_ops.explained_variance(y, y).item() == pytest.approx(1.0)
    assert math_ops.explained_variance(torch.zeros(100) + y.mean(), y).item() == pytest.approx(
        0.0, abs=1e-6
    )


def test_explained_variance_with_mask_and_constant_target():
    y = torch.tensor([1.0, 2.0, 3.0, 100.0])
    ypred = torch.tensor([1.0, 2.0, 4.0, -50.0])
    mask = torch.tensor([True, True, True, False])
    expected = 1 - np.var([0.0, 0.0, -1.0]) / np.var([1.0, 2.0, 3.0])
    assert math_ops.explained_variance(ypred, y, mask).item() == pytest.approx(expected, rel=1e-6)
    assert math_ops.explained_variance(torch.randn(4), torch.ones(4)).item() == 0.0


def test_global_norm_and_clip_by_global_norm():
    a, b = torch.tensor([3.0, 0.0]), torch.tensor([[0.0, 4.0]])
    assert math_ops.global_norm([a, None, b]).item() == pytest.approx(5.0)
    clipped, norm = math_ops.clip_by_global_norm([a, None, b], 1.0)
    assert norm.item() == pytest.approx(5.0)
    assert clipped[1] is None
    torch.testing.assert_close(clipped[0], torch.tensor([0.6, 0.0]))
    torch.testing.assert_close(clipped[2], torch.tensor([[0.0, 0.8]]))
    assert math_ops.global_norm(clipped).item() == pytest.approx(1.0)
    # Below the threshold nothing changes; in place modifies the inputs.
    same, norm = math_ops.clip_by_global_norm([a, b], 10.0)
    torch.testing.assert_close(same[0], a)
    math_ops.clip_by_global_norm([a, b], 2.5, in_place=True)
    torch.testing.assert_close(a, torch.tensor([1.5, 0.0]))
    torch.testing.assert_close(b, torch.tensor([[0.0, 2.0]]))


def test_clip_by_global_norm_uses_a_given_norm():
    clipped, norm = math_ops.clip_by_global_norm([torch.ones(4)], 1.0, use_norm=torch.tensor(4.0))
    assert norm.item() == 4.0
    torch.testing.assert_close(clipped[0], torch.full((4,), 0.25))


def test_masked_mean_and_sum():
    x = torch.tensor([[1.0, 2.0], [3.0, 10.0]])
    mask = torch.tensor([[1, 1], [1, 0]])
    assert math_ops.masked_mean(x, mask).item() == pytest.approx(2.0)
    torch.testing.assert_close(math_ops.masked_mean(x, mask, dim=0), torch.tensor([2.0, 2.0]))
    assert math_ops.masked_mean(x, torch.zeros(2, 2)).item() == 0.0
    assert math_ops.masked_mean(x, None).item() == pytest.approx(4.0)
    assert math_ops.masked_sum(x, mask).item() == pytest.approx(6.0)


def test_masked_mean_with_weights_by_hand():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    mask = torch.tensor([[True, True], [True, False], [False, True]])
    weights = torch.tensor([0.5, 0.25])  # broadcast over rows
    # sum(mask * w * x) / sum(mask): weights do not change the count.
    expected = (0.5 * 1 + 0.25 * 2 + 0.5 * 3 + 0.25 * 6) / 4
    assert math_ops.masked_mean(x, mask, weights).item() == pytest.approx(expected)
    assert math_ops.masked_mean(x, None, weights).item() == pytest.approx((0.5 * 9 + 0.25 * 12) / 6)
    by_column = math_ops.masked_mean(x, mask, weights, dim=0)
    torch.testing.assert_close(by_column, torch.tensor([0.5 * 4 / 2, 0.25 * 8 / 2]))


def test_masked_mean_is_the_sum_over_count_formula_bit_for_bit():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(7, 5, generator=g)
    mask = torch.rand(7, 5, generator=g) > 0.3
    weights = torch.rand(7, 5, generator=g)
    m = mask.float()
    assert torch.equal(math_ops.masked_mean(x, mask), (x * m).sum() / m.sum().clamp(min=1.0))
    assert torch.equal(
        math_ops.masked_mean(x, mask, weights), (x * weights * m).sum() / m.sum().clamp(min=1.0)
    )
    assert torch.equal(math_ops.masked_mean(x, None), x.mean())


def test_masked_mean_counts_the_broadcast_entries():
    x = torch.tensor([[[1.0, 3.0]], [[5.0, 7.0]]])  # [2, 1, 2]
    row_mask = torch.tensor([[[True]], [[False]]])  # [2, 1, 1]: row 0 only
    assert math_ops.masked_mean(x, row_mask).item() == 2.0  # (1 + 3) / 2 entries
    per_sequence = torch.tensor([2.0, 4.0])  # [B]
    step_mask = torch.tensor([[1, 1], [1, 0], [0, 0]])  # [T, B]
    assert math_ops.masked_mean(per_sequence, step_mask).item() == pytest.approx((2 + 4 + 2) / 3)


def test_masked_mean_of_a_scalar_or_a_number():
    assert math_ops.masked_mean(torch.tensor(2.5), torch.tensor([True, False])).item() == 2.5
    assert math_ops.masked_mean(1.5).item() == 1.5
    with pytest.raises(ValueError, match="per-sample loss"):
        math_ops.masked_mean(torch.tensor(1.0), None, torch.ones(2))


def test_add_ignore_empty_sum_to_leftmost_and_activations():
    x = torch.ones(2)
    assert math_ops.add_ignore_empty((), x) is x
    assert math_ops.add_ignore_empty(x, None) is x
    torch.testing.assert_close(math_ops.add_ignore_empty(x, x), 2 * x)
    assert math_ops.sum_to_leftmost(torch.ones(2, 3, 4), 1).tolist() == [12.0, 12.0]
    assert math_ops.sum_to_leftmost(torch.ones(2), 1).tolist() == [1.0, 1.0]
    assert math_ops.identity(x) is x
    assert math_ops.clipped_exp(torch.tensor([100.0])).item() == pytest.approx(math.exp(2.0))
