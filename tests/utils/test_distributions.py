"""alf.utils.distributions: closed forms against numerical integration and torch's own
distributions, the Softsign bijector against autograd, the Beta mode and clamping."""

import math

import pytest
import torch
import torch.distributions as td

import alf
from alf.configuration import scopes
from alf.networks.normal_projection_networks import (
    NormalProjectionNetwork,
    StableNormalProjectionNetwork,
)
from alf.tensor_specs import BoundedTensorSpec
from alf.utils import dist_utils
from alf.utils.dist_utils import Softsign
from alf.utils.distributions import (
    AffineTransformedDistribution,
    Beta,
    StableCauchy,
    TruncatedNormal,
)


def _grid(low, high, n=200001):
    return torch.linspace(low, high, n, dtype=torch.float64)


def _integrate(values, grid):
    return torch.trapezoid(values, grid)


@pytest.mark.parametrize("loc, scale", [(0.3, 0.5), (-0.8, 2.0), (0.9, 0.05)])
def test_truncated_normal_density_mean_entropy_by_quadrature(loc, scale):
    low, high = -1.0, 1.0
    dist = TruncatedNormal(
        torch.tensor([loc], dtype=torch.float64),
        torch.tensor([scale], dtype=torch.float64),
        torch.tensor([low], dtype=torch.float64),
        torch.tensor([high], dtype=torch.float64),
    )
    grid = _grid(low, high)
    log_q = dist.log_prob(grid.unsqueeze(-1).unsqueeze(-1))[:, 0]
    q = log_q.exp()
    assert _integrate(q, grid).item() == pytest.approx(1.0, abs=1e-6)
    assert dist.mean.item() == pytest.approx(_integrate(grid * q, grid).item(), abs=1e-6)
    assert dist.entropy().item() == pytest.approx(-_integrate(q * log_q, grid).item(), abs=1e-5)
    assert dist.log_prob(torch.tensor([[1.5]], dtype=torch.float64)).item() == -math.inf


def test_truncated_normal_kl_by_quadrature():
    bounds = torch.tensor([-1.0], dtype=torch.float64), torch.tensor([2.0], dtype=torch.float64)
    p = TruncatedNormal(
        torch.tensor([0.2], dtype=torch.float64), torch.tensor([0.7]).double(), *bounds
    )
    q = TruncatedNormal(
        torch.tensor([1.1], dtype=torch.float64), torch.tensor([0.4]).double(), *bounds
    )
    grid = _grid(-1.0, 2.0).reshape(-1, 1, 1)
    log_p, log_q = p.log_prob(grid)[:, 0], q.log_prob(grid)[:, 0]
    expected = _integrate(log_p.exp() * (log_p - log_q), grid.flatten())
    assert td.kl_divergence(p, q).item() == pytest.approx(expected.item(), abs=1e-6)


def test_affine_transformed_entropy_and_moments_match_the_normal_they_make():
    base = td.Independent(td.Normal(torch.tensor([0.5, -1.0]), torch.tensor([2.0, 0.3])), 1)
    loc, scale = torch.tensor([1.0, -2.0]), torch.tensor([3.0, -0.5])
    dist = AffineTransformedDistribution(base, loc, scale)
    same = td.Normal(loc + scale * base.mean, scale.abs() * base.stddev)
    torch.testing.assert_close(dist.entropy(), same.entropy().sum())
    torch.testing.assert_close(dist_utils.entropy(dist), same.entropy().sum())
    torch.testing.assert_close(dist.mean, same.mean)
    torch.testing.assert_close(dist.stddev, same.stddev)
    x = torch.tensor([0.3, 0.7])
    torch.testing.assert_close(dist.log_prob(x), same.log_prob(x).sum())


def test_softsign_bijector():
    t = Softsign()
    x = torch.tensor([-30.0, -1.5, 0.0, 0.2, 4.0], requires_grad=True)
    y = t(x)
    torch.testing.assert_close(y, x / (1 + x.abs()))
    (dy,) = torch.autograd.grad(y.sum(), x)
    torch.testing.assert_close(t.log_abs_det_jacobian(x, y), dy.abs().log())
    torch.testing.assert_close(
        Softsign(cache_size=0).inv(y.detach()), x.detach(), rtol=1e-4, atol=0
    )
    assert torch.isfinite(Softsign(cache_size=0).inv(torch.tensor([1.0, -1.0]))).all()


def test_gin_refers_to_the_squashing_bijectors_by_alf_names():
    """ALF's ``sarsa_sac_bipedal_walker.gin`` line, and ``StableTanh`` likewise: the
    projection network gets the bijector the reference builds."""
    alf.reset_configs()
    try:
        alf.config_util.apply_gin_params(
            [
                "actor/StableNormalProjectionNetwork.dist_squashing_transform"
                " = @dist_utils.Softsign()",
                "NormalProjectionNetwork.dist_squashing_transform = @dist_utils.StableTanh()",
            ]
        )
        spec = BoundedTensorSpec((2,), torch.float32, -1.0, 1.0)
        net = scopes.in_scope("actor", StableNormalProjectionNetwork)(4, spec)  # @actor/...
        assert type(net._squashing_transform) is Softsign
        x = torch.tensor([3.0, -1.0])
        torch.testing.assert_close(net._squashing_transform(x), torch.tensor([0.75, -0.5]))
        assert type(NormalProjectionNetwork(4, spec)._squashing_transform) is dist_utils.StableTanh
    finally:
        alf.reset_configs()


@pytest.mark.parametrize(
    "a, b, mode", [(3.0, 2.0, 2.0 / 3.0), (0.5, 2.0, 0.0), (2.0, 0.7, 1.0), (1.0, 1.0, 0.5)]
)
def test_beta_mode(a, b, mode):
    assert Beta(torch.tensor(a), torch.tensor(b)).mode.item() == pytest.approx(mode)


def test_beta_rsample_stays_off_the_ends():
    dist = Beta(torch.full((10000,), 0.05), torch.full((10000,), 0.05), eps=1e-3)
    x = dist.rsample()
    assert x.min() >= 1e-3 and x.max() <= 1 - 1e-3
    assert torch.isfinite(dist.log_prob(x)).all()


def test_stable_cauchy_expand_keeps_the_clipped_sampler():
    dist = StableCauchy(torch.tensor(0.0), torch.tensor(1.0)).expand((50000,))
    assert type(dist) is StableCauchy
    assert dist.rsample().abs().max() <= math.tan(0.49 * math.pi) + 1e-3
