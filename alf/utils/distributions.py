"""Bounded and heavy-tailed action distributions, with ALF's names.

``dist_utils`` re-exports every name here (ALF's confs write ``dist_utils.TruncatedNormal``):

- ``Beta`` / ``DiagMultivariateBeta``: Beta densities on ``[0, 1]`` whose reparameterized
  samples are kept ``eps`` away from 0 and 1 (the log-density and its gradient are
  infinite there);
- ``AffineTransformedDistribution``: ``loc + scale * X`` with the exact entropy, mean and
  standard deviation (e.g. a Beta stretched onto the action bounds);
- ``TruncatedNormal`` / ``TruncatedCauchy``: ``loc + scale * Z`` restricted to
  ``[lower_bound, upper_bound]`` and renormalized, sampled by inverting the CDF;
- ``StableCauchy`` / ``DiagMultivariateCauchy``: a Cauchy whose samples leave out the
  most extreme quantiles;
- ``SquashToUnitInterval``: the base of the bijectors onto ``(-1, 1)`` (``dist_utils``'
  ``StableTanh`` and ``Softsign``).

All are built with torch's argument validation off, as the rest of alf's distributions.
"""

from __future__ import annotations

import math

import torch
import torch.distributions as td
from torch.distributions import constraints

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


def _sum_event(value: torch.Tensor, event_ndims: int) -> torch.Tensor:
    return value.sum(tuple(range(-event_ndims, 0))) if event_ndims else value


# ----------------------------------------------------------------------------
# Beta


class Beta(td.Beta):
    """``td.Beta`` whose ``rsample`` stays in ``[eps, 1 - eps]`` and whose mode is always defined.

    ``concentration1`` (often called alpha) weighs the density towards 1,
    ``concentration0`` (beta) towards 0. ``concentration1`` and ``concentration0`` return
    the tensors given (torch's return slices of a stacked copy, which a gradient hook on
    the given tensors would not see).

    Args:
        concentration1: alpha, positive.
        concentration0: beta, positive.
        eps: samples are clamped to ``[eps, 1 - eps]``; None: the dtype's machine epsilon.
        validate_args: torch's argument validation.
    """

    def __init__(self, concentration1, concentration0, eps=None, validate_args=False):
        super().__init__(concentration1, concentration0, validate_args=validate_args)
        self._given = (concentration1, concentration0)
        dtype = self._dirichlet.concentration.dtype
        self._eps = torch.finfo(dtype).eps if eps is None else float(eps)

    @property
    def concentration1(self):
        return self._given[0]

    @property
    def concentration0(self):
        return self._given[1]

    @property
    def eps(self) -> float:
        return self._eps

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        new = super().expand(batch_shape, _instance=new)
        new._given = (new._dirichlet.concentration[..., 0], new._dirichlet.concentration[..., 1])
        new._eps = self._eps
        return new

    @property
    def mode(self):
        """``(a - 1) / (a + b - 2)`` when both exceed 1; else the end the density rises to
        (0 when ``a < b``, 1 when ``a > b``, 0.5 when they are equal)."""
        a, b = self.concentration1, self.concentration0
        a, b = torch.broadcast_tensors(torch.as_tensor(a), torch.as_tensor(b))
        interior = (a - 1) / (a + b - 2)
        edge = torch.where(a < b, 0.0, torch.where(a > b, 1.0, 0.5)).to(interior.dtype)
        return torch.where((a > 1) & (b > 1), interior, edge)

    def rsample(self, sample_shape=()):
        return super().rsample(sample_shape).clamp(self._eps, 1 - self._eps)


class DiagMultivariateBeta(td.Independent):
    """Independent ``Beta`` densities over the last dim (``log_prob`` sums over it).

    Args:
        concentration1: ``[..., A]`` alphas.
        concentration0: ``[..., A]`` betas.
    """

    def __init__(self, concentration1, concentration0):
        super().__init__(Beta(concentration1, concentration0), 1, validate_args=False)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(DiagMultivariateBeta, _instance)
        return super().expand(batch_shape, _instance=new)


# ----------------------------------------------------------------------------
# affine map with the moments and entropy


class AffineTransformedDistribution(td.TransformedDistribution):
    """The distribution of ``loc + scale * X`` for ``X ~ base_dist``.

    Unlike a plain ``TransformedDistribution`` it knows its entropy,
    ``H(X) + sum over the event of log|scale|``, and its mean, variance and stddev.

    Args:
        base_dist: the distribution of ``X``.
        loc: shift, broadcastable to ``base_dist``'s event shape.
        scale: factor, broadcastable likewise (nonzero).
    """

    def __init__(self, base_dist: td.Distribution, loc, scale):
        transform = td.AffineTransform(loc, scale, cache_size=1)
        super().__init__(base_dist, [transform], validate_args=False)
        self.loc = loc
        self.scale = scale

    def log_abs_scale(self) -> torch.Tensor:
        """``sum of log|scale|`` over the event (a scalar)."""
        event = self.base_dist.event_shape
        scale = torch.as_tensor(self.scale, dtype=torch.get_default_dtype())
        return scale.abs().log().expand(event).sum() if event else scale.abs().log()

    def entropy(self):
        return self.base_dist.entropy() + self.log_abs_scale()

    @property
    def mean(self):
        return self.loc + self.scale * self.base_dist.mean

    @property
    def variance(self):
        return self.scale * self.scale * self.base_dist.variance

    @property
    def stddev(self):
        return torch.as_tensor(self.scale).abs() * self.base_dist.stddev


# ----------------------------------------------------------------------------
# truncated location-scale distributions


class _StandardNormal:
    @staticmethod
    def cdf(z):
        return 0.5 * (1 + torch.erf(z * _INV_SQRT2))

    @staticmethod
    def icdf(p):
        return torch.erfinv(2 * p - 1) * math.sqrt(2.0)

    @staticmethod
    def log_prob(z):
        return -0.5 * z * z - _LOG_SQRT_2PI


class _StandardCauchy:
    @staticmethod
    def cdf(z):
        return torch.atan(z) / math.pi + 0.5

    @staticmethod
    def icdf(p):
        return torch.tan(math.pi * (p - 0.5))

    @staticmethod
    def log_prob(z):
        return -torch.log1p(z * z) - math.log(math.pi)


class TruncatedDistribution(td.Distribution):
    r"""``loc + scale * Z`` for a standard ``Z`` (``standard``), restricted to
    ``[lower_bound, upper_bound]`` and renormalized:

    .. math::

        q(x) = \frac{p((x - loc) / scale)}{scale\,(P(\beta) - P(\alpha))},\quad
        \alpha = \frac{lower - loc}{scale},\ \beta = \frac{upper - loc}{scale}

    where ``p``, ``P`` are the standard density and CDF. The event shape is the bounds'
    (broadcast) shape, so ``log_prob`` sums over it; samples invert the CDF on a uniform
    draw between ``P(alpha)`` and ``P(beta)`` (reparameterized) and are clamped to the
    bounds against rounding.

    Args:
        loc: ``batch_shape + event_shape`` locations.
        scale: positive scales, broadcastable to ``loc``.
        lower_bound: ``event_shape`` lower bounds.
        upper_bound: ``event_shape`` upper bounds.
        standard: an object with static ``cdf``, ``icdf`` and ``log_prob`` of ``Z``.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    has_rsample = True

    def __init__(self, loc, scale, lower_bound, upper_bound, standard):
        lower = torch.as_tensor(lower_bound, dtype=loc.dtype, device=loc.device)
        upper = torch.as_tensor(upper_bound, dtype=loc.dtype, device=loc.device)
        event_shape = torch.broadcast_shapes(lower.shape, upper.shape)
        shape = torch.broadcast_shapes(loc.shape, scale.shape, event_shape)
        batch_shape = shape[: len(shape) - len(event_shape)]
        self._loc, self._scale = loc, scale
        self._lower, self._upper = lower, upper
        self._standard = standard
        self._cdf_lower = standard.cdf((lower - loc) / scale)
        self._cdf_upper = standard.cdf((upper - loc) / scale)
        self._mass = (self._cdf_upper - self._cdf_lower).clamp_min(torch.finfo(loc.dtype).tiny)
        super().__init__(batch_shape, event_shape, validate_args=False)

    @property
    def loc(self):
        return self._loc

    @property
    def scale(self):
        return self._scale

    @property
    def lower_bound(self):
        return self._lower

    @property
    def upper_bound(self):
        return self._upper

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self._lower, self._upper)

    @property
    def mode(self):
        """The location clamped to the bounds (the standard densities peak at 0)."""
        return torch.minimum(torch.maximum(self._loc, self._lower), self._upper)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = torch.finfo(self._loc.dtype).eps
        u = torch.rand(shape, dtype=self._loc.dtype, device=self._loc.device)
        p = (self._cdf_lower + u * (self._cdf_upper - self._cdf_lower)).clamp(eps, 1 - eps)
        x = self._loc + self._scale * self._standard.icdf(p)
        return torch.minimum(torch.maximum(x, self._lower), self._upper)

    def sample(self, sample_shape=()):
        with torch.no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value):
        z = (value - self._loc) / self._scale
        log_q = self._standard.log_prob(z) - torch.log(self._scale * self._mass)
        inside = (value >= self._lower) & (value <= self._upper)
        log_q = torch.where(inside, log_q, -math.inf)
        return _sum_event(log_q, len(self.event_shape))


class TruncatedNormal(TruncatedDistribution):
    """A normal ``N(loc, scale^2)`` truncated to ``[lower_bound, upper_bound]`` (see
    ``TruncatedDistribution``), with its entropy and mean in closed form.

    Args:
        loc: ``batch_shape + event_shape`` means of the untruncated normal.
        scale: its standard deviations.
        lower_bound: ``event_shape`` lower bounds.
        upper_bound: ``event_shape`` upper bounds.
    """

    def __init__(self, loc, scale, lower_bound, upper_bound):
        super().__init__(loc, scale, lower_bound, upper_bound, _StandardNormal)

    def _alpha_beta_terms(self):
        """``phi(alpha)``, ``phi(beta)``, ``alpha phi(alpha)``, ``beta phi(beta)`` (0 at
        infinite bounds)."""
        out = []
        for bound in (self._lower, self._upper):
            z = (bound - self._loc) / self._scale
            phi = torch.exp(_StandardNormal.log_prob(z))
            z_phi = torch.where(torch.isfinite(z), z * phi, torch.zeros_like(phi))
            out.append((phi, z_phi))
        return out

    @property
    def mean(self):
        (phi_a, _), (phi_b, _) = self._alpha_beta_terms()
        return self._loc + self._scale * (phi_a - phi_b) / self._mass

    def entropy(self):
        """``log(sqrt(2 pi e) scale Z) + (alpha phi(alpha) - beta phi(beta)) / (2 Z)``."""
        (_, a_phi_a), (_, b_phi_b) = self._alpha_beta_terms()
        h = _LOG_SQRT_2PI + 0.5 + torch.log(self._scale * self._mass)
        h = h + (a_phi_a - b_phi_b) / (2 * self._mass)
        return _sum_event(h, len(self.event_shape))


@td.kl.register_kl(TruncatedNormal, TruncatedNormal)
def _kl_truncated_normal(p, q):
    """``KL(p || q) = -H(p) - E_p[log q]`` for two truncated normals on the same bounds;
    ``E_p[log q]`` needs p's first two moments, which are closed form."""
    if not (
        torch.equal(p.lower_bound, q.lower_bound) and torch.equal(p.upper_bound, q.upper_bound)
    ):
        raise ValueError("KL of TruncatedNormal needs the same bounds in both distributions")
    (phi_a, a_phi_a), (phi_b, b_phi_b) = p._alpha_beta_terms()
    mean_z = (phi_a - phi_b) / p._mass  # E[(x - loc_p) / scale_p]
    second_z = 1 + (a_phi_a - b_phi_b) / p._mass  # E[((x - loc_p) / scale_p)^2]
    # E[(x - loc_q)^2] with x - loc_q = scale_p z + (loc_p - loc_q)
    delta = p.loc - q.loc
    second = p.scale**2 * second_z + 2 * p.scale * delta * mean_z + delta**2
    expected_log_q = -_LOG_SQRT_2PI - torch.log(q.scale * q._mass) - 0.5 * second / q.scale**2
    kl = -p.entropy() - _sum_event(expected_log_q, len(p.event_shape))
    return kl


class TruncatedCauchy(TruncatedDistribution):
    """A Cauchy with median ``loc`` and half-width ``scale`` truncated to
    ``[lower_bound, upper_bound]`` (see ``TruncatedDistribution``). Its entropy has no
    closed form here (``dist_utils.entropy`` estimates it).

    Args:
        loc: ``batch_shape + event_shape`` medians.
        scale: half-widths.
        lower_bound: ``event_shape`` lower bounds.
        upper_bound: ``event_shape`` upper bounds.
    """

    def __init__(self, loc, scale, lower_bound, upper_bound):
        super().__init__(loc, scale, lower_bound, upper_bound, _StandardCauchy)


# ----------------------------------------------------------------------------
# Cauchy


class StableCauchy(td.Cauchy):
    """``td.Cauchy`` whose ``rsample`` draws the quantile from
    ``[0.5 - clipping_value, 0.5 + clipping_value]`` only, so a sample is at most
    ``tan(pi * clipping_value)`` half-widths from the median (about 31.8 for 0.49)."""

    def rsample(self, sample_shape=(), clipping_value: float = 0.49):
        shape = self._extended_shape(sample_shape)
        u = torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device) - 0.5
        u = u.clamp(-clipping_value, clipping_value)
        return self.loc + self.scale * torch.tan(math.pi * u)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StableCauchy, _instance)
        return super().expand(batch_shape, _instance=new)


class DiagMultivariateCauchy(td.Independent):
    """Independent ``StableCauchy`` densities over the last ``event_ndims`` dims.

    Args:
        loc: ``[..., A]`` medians.
        scale: ``[..., A]`` half-widths.
        event_ndims: number of rightmost dims forming one event.
    """

    def __init__(self, loc, scale, event_ndims: int = 1):
        base = StableCauchy(loc, scale, validate_args=False)
        super().__init__(base, event_ndims, validate_args=False)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(DiagMultivariateCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return self.base_dist.loc


# ----------------------------------------------------------------------------
# transforms


class SquashToUnitInterval(td.Transform):
    """What an increasing bijector from the reals onto ``(-1, 1)`` without parameters
    shares: its constraints, and equality, hashing and caching by its class alone.

    Args:
        cache_size: 1 caches the last ``(x, y)`` so the inverse of a fresh sample is exact.
    """

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __init__(self, cache_size=1):
        super().__init__(cache_size=cache_size)

    def __eq__(self, other):
        return type(other) is type(self)

    def __hash__(self):
        return hash(type(self))

    def with_cache(self, cache_size=1):
        return type(self)(cache_size)
