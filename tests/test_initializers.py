"""Empirical statistics of ``variance_scaling_init`` against its formula."""

import math

import pytest
import torch

from alf import initializers
from alf.initializers import variance_scaling_init
from alf.utils import math_ops


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.mark.parametrize("distribution", ["truncated_normal", "uniform", "untruncated_normal"])
def test_std_matches_formula_for_relu(distribution):
    w = torch.empty(500, 800)
    variance_scaling_init(w, gain=0.5, distribution=distribution, nonlinearity=torch.relu_)
    expected = 0.5 * math.sqrt(2.0) / math.sqrt(800)
    assert w.std().item() == pytest.approx(expected, rel=0.01)
    assert abs(w.mean().item()) < 0.01 * expected


def test_truncated_normal_and_uniform_bounds():
    w = torch.empty(400, 400)
    std = 1.0 / math.sqrt(400)
    variance_scaling_init(w, nonlinearity=math_ops.identity)
    assert w.abs().max().item() <= 2 * std / 0.87962566 + 1e-6
    variance_scaling_init(w, nonlinearity=None, distribution="uniform")
    assert w.abs().max().item() <= math.sqrt(3) * std + 1e-6
    assert w.abs().max().item() > 0.99 * math.sqrt(3) * std


def test_modes_and_conv_fans():
    w = torch.empty(64, 32, 3, 3)  # fan_in 32*9, fan_out 64*9
    variance_scaling_init(w, mode="fan_out", nonlinearity=None, distribution="untruncated_normal")
    assert w.std().item() == pytest.approx(1 / math.sqrt(64 * 9), rel=0.02)
    variance_scaling_init(w, mode="fan_avg", nonlinearity=None, distribution="untruncated_normal")
    assert w.std().item() == pytest.approx(1 / math.sqrt(48 * 9), rel=0.02)
    variance_scaling_init(w, transposed=True, nonlinearity=None, distribution="untruncated_normal")
    assert w.std().item() == pytest.approx(1 / math.sqrt(64 * 9), rel=0.02)


def test_gain_without_activation_gain():
    w = torch.empty(300, 1000)
    variance_scaling_init(w, gain=2.0, calc_gain_after_activation=False, nonlinearity=torch.relu)
    assert w.std().item() == pytest.approx(2.0 / math.sqrt(1000), rel=0.01)


def test_calculate_gain():
    assert initializers.calculate_gain(torch.relu) == pytest.approx(math.sqrt(2.0))
    # Numerical integration agrees with the closed form for relu and identity.
    assert initializers.calculate_gain(lambda x: x.clamp(min=0)) == pytest.approx(
        math.sqrt(2.0), rel=1e-5
    )
    assert initializers.calculate_gain(lambda x: x * 1.0) == pytest.approx(1.0, rel=1e-5)
    # E[tanh(z)^2] for z ~ N(0, 1) is about 0.3943.
    assert initializers.calculate_gain(torch.tanh) == pytest.approx(1 / math.sqrt(0.3943), rel=1e-3)


def test_unknown_options_raise():
    with pytest.raises(ValueError, match="mode"):
        variance_scaling_init(torch.empty(2, 2), mode="fan_max")
    with pytest.raises(ValueError, match="distribution"):
        variance_scaling_init(torch.empty(2, 2), distribution="cauchy")
