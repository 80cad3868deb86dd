"""Returns and advantages against hand-expanded values, including episode seams."""

import pytest
import torch

from alf.data_structures import StepType
from alf.utils import value_ops

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST
GAMMA, LAMBDA = 0.9, 0.8


def _seam_batch():
    """T=5, B=2. Column 0: a time-limit LAST at t=2 (discount gamma), then a new episode.
    Column 1: a terminal LAST at t=2 (discount 0), then a new episode. The FIRST rows carry
    a large reward that must never leak into the previous episode."""
    step_types = torch.tensor([[F, M], [M, M], [L, L], [F, F], [M, M]], dtype=torch.int32)
    rewards = torch.tensor([[0.0, 0.0], [1.0, -1.0], [2.0, 3.0], [100.0, 100.0], [3.0, 0.5]])
    values = torch.tensor([[1.0, 0.5], [2.0, -1.0], [3.0, 2.0], [4.0, 1.0], [5.0, 0.0]])
    discounts = GAMMA * torch.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    return rewards, values, step_types, discounts


def _column(x, b):
    return [float(v) for v in x[:, b]]


def test_gae_hand_expanded_with_seams():
    r, v, st, d = _seam_batch()
    adv = value_ops.generalized_advantage_estimation(r, v, st, d, td_lambda=LAMBDA)
    assert adv.shape == (4, 2)
    g, gl = GAMMA, GAMMA * LAMBDA
    # Column 0: t=1 bootstraps from V_2 (time limit, discount gamma); A_2 = 0 at LAST.
    delta3 = 3.0 + g * 5.0 - 4.0
    delta1 = 2.0 + g * 3.0 - 2.0
    delta0 = 1.0 + g * 2.0 - 1.0
    expected0 = [delta0 + gl * delta1, delta1, 0.0, delta3]
    # Column 1: terminal LAST at t=2 (discount 0): t=1 does not bootstrap.
    delta3 = 0.5 + g * 0.0 - 1.0
    delta1 = 3.0 + 0.0 * 2.0 - (-1.0)
    delta0 = -1.0 + g * (-1.0) - 0.5
    expected1 = [delta0 + gl * delta1, delta1, 0.0, delta3]
    assert _column(adv, 0) == pytest.approx(expected0, abs=1e-6)
    assert _column(adv, 1) == pytest.approx(expected1, abs=1e-6)


def test_discounted_return_hand_expanded_with_seams():
    r, v, st, d = _seam_batch()
    ret = value_ops.discounted_return(r, v, st, d)
    g = GAMMA
    # G_{T-1} = V_{T-1}; G_t = V_t at LAST; otherwise G_t = r_{t+1} + gamma_{t+1} G_{t+1}.
    expected0 = [1.0 + g * (2.0 + g * 3.0), 2.0 + g * 3.0, 3.0, 3.0 + g * 5.0]
    expected1 = [-1.0 + g * 3.0, 3.0, 2.0, 0.5 + g * 0.0]
    assert _column(ret, 0) == pytest.approx(expected0, abs=1e-6)
    assert _column(ret, 1) == pytest.approx(expected1, abs=1e-6)


def test_one_step_discounted_return_hand_expanded():
    r, v, st, d = _seam_batch()
    ret = value_ops.one_step_discounted_return(r, v, st, d)
    g = GAMMA
    expected0 = [1.0 + g * 2.0, 2.0 + g * 3.0, 3.0, 3.0 + g * 5.0]
    expected1 = [-1.0 + g * -1.0, 3.0 + 0.0, 2.0, 0.5 + g * 0.0]
    assert _column(ret, 0) == pytest.approx(expected0, abs=1e-6)
    assert _column(ret, 1) == pytest.approx(expected1, abs=1e-6)


def test_nothing_leaks_across_the_seam():
    r, v, st, d = _seam_batch()
    r2, v2 = r.clone(), v.clone()
    r2[3:] = torch.randn(2, 2) * 50  # everything of the next episode
    v2[3:] = torch.randn(2, 2) * 50
    for fn in (value_ops.generalized_advantage_estimation, value_ops.discounted_return):
        before, after = fn(r, v, st, d), fn(r2, v2, st, d)
        torch.testing.assert_close(before[:3], after[:3])


def test_time_limit_bootstraps_but_termination_does_not():
    st = torch.tensor([[M], [L]], dtype=torch.int32)
    r = torch.tensor([[0.0], [1.0]])
    v = torch.tensor([[0.0], [10.0]])
    truncated = value_ops.discounted_return(r, v, st, torch.tensor([[1.0], [1.0]]))
    terminated = value_ops.discounted_return(r, v, st, torch.tensor([[1.0], [0.0]]))
    assert truncated.item() == pytest.approx(11.0)
    assert terminated.item() == pytest.approx(1.0)


def _random_batch(T=7, B=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    st = torch.randint(0, 3, (T, B), generator=g).to(torch.int32)
    r = torch.randn(T, B, generator=g)
    v = torch.randn(T, B, generator=g)
    d = GAMMA * (torch.rand(T, B, generator=g) > 0.3).float()
    return r, v, st, d


def test_gae_lambda_one_is_return_minus_value():
    r, v, st, d = _random_batch()
    adv = value_ops.generalized_advantage_estimation(r, v, st, d, td_lambda=1.0)
    ret = value_ops.discounted_return(r, v, st, d)
    torch.testing.assert_close(adv, ret - v[:-1])


def test_gae_lambda_zero_is_one_step_td():
    r, v, st, d = _random_batch(seed=1)
    adv = value_ops.generalized_advantage_estimation(r, v, st, d, td_lambda=0.0)
    ret = value_ops.one_step_discounted_return(r, v, st, d)
    torch.testing.assert_close(adv, ret - v[:-1])


def test_gae_matches_the_explicit_sum_without_seams():
    T, B = 6, 2
    g = torch.Generator().manual_seed(2)
    r, v = torch.randn(T, B, generator=g), torch.randn(T, B, generator=g)
    st = torch.full((T, B), M, dtype=torch.int32)
    d = torch.full((T, B), GAMMA)
    adv = value_ops.generalized_advantage_estimation(r, v, st, d, td_lambda=LAMBDA)
    delta = r[1:] + GAMMA * v[1:] - v[:-1]
    expected = torch.stack(
        [sum((GAMMA * LAMBDA) ** k * delta[t + k] for k in range(T - 1 - t)) for t in range(T - 1)]
    )
    torch.testing.assert_close(adv, expected)


def test_td_lambda_is_gae_plus_value():
    r, v, st, d = _random_batch(seed=3)
    ret = value_ops.td_lambda(r, v, st, d, td_lambda=0.7)
    adv = value_ops.generalized_advantage_estimation(r, v, st, d, td_lambda=0.7)
    torch.testing.assert_close(ret, adv + v[:-1])


def test_batch_major_equals_time_major():
    r, v, st, d = _random_batch(seed=4)
    for fn in (
        value_ops.generalized_advantage_estimation,
        value_ops.discounted_return,
        value_ops.one_step_discounted_return,
        value_ops.td_lambda,
    ):
        tm = fn(r, v, st, d)
        bm = fn(r.t(), v.t(), st.t(), d.t(), time_major=False)
        torch.testing.assert_close(bm, tm.t())


def test_vector_rewards_broadcast_step_types_and_discounts():
    r, v, st, d = _random_batch(seed=5)
    r2 = torch.stack([r, 2 * r], -1)
    v2 = torch.stack([v, 2 * v], -1)
    adv = value_ops.generalized_advantage_estimation(r2, v2, st, d, td_lambda=LAMBDA)
    single = value_ops.generalized_advantage_estimation(r, v, st, d, td_lambda=LAMBDA)
    torch.testing.assert_close(adv[..., 0], single)
    torch.testing.assert_close(adv[..., 1], 2 * single)


def test_results_carry_no_gradient_and_need_two_steps():
    r, v, st, d = _random_batch(seed=6)
    v.requires_grad_(True)
    assert not value_ops.generalized_advantage_estimation(r, v, st, d).requires_grad
    with pytest.raises(ValueError, match="at least 2"):
        value_ops.discounted_return(r[:1], v[:1], st[:1], d[:1])


def test_float64_inputs_stay_float64():
    r, v, st, d = (x.double() if x.is_floating_point() else x for x in _random_batch(seed=7))
    assert value_ops.generalized_advantage_estimation(r, v, st, d).dtype == torch.float64


def test_torch_fallback_loop_matches_numpy_loop():
    r, v, st, d = _random_batch(seed=8)
    expected = value_ops.generalized_advantage_estimation(r, v, st, d, td_lambda=LAMBDA)
    half = value_ops.generalized_advantage_estimation(
        r.bfloat16(), v.bfloat16(), st, d, td_lambda=LAMBDA
    )
    assert half.dtype == torch.bfloat16
    torch.testing.assert_close(half.float(), expected, atol=0.1, rtol=0.05)
