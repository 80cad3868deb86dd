"""Running normalizers: mean and variance statistics kept as module buffers.

``AdaptiveNormalizer`` normalizes a nest of tensors elementwise with running
statistics; ``ScalarAdaptiveNormalizer`` keeps one mean and variance for all
elements (rewards). Both merge each batch into the statistics exactly (Chan et al.
1979, "Updating formulae and a pairwise algorithm for computing sample variances"):
with ``n`` samples already seen and a batch of ``m`` with mean ``mu_b`` and variance
``var_b``, the batch weight is ``w = m / (n + m)`` and

    delta = mu_b - mu
    mu   <- mu + w * delta
    var  <- (1 - w) * var + w * var_b + w * (1 - w) * delta^2

With ``speed`` set, ``w`` is at least ``min(1, m / speed)``, which turns the exact
average into an exponential moving average over roughly the last ``speed``
samples once more than ``speed`` have been seen (ALF's "adaptive" averaging),
so statistics can follow a drifting distribution.

The statistics are registered buffers, so they are saved in checkpoints. With several
learner ranks (``alf.parallel.collectives``) each update merges the union of all ranks'
batches (``pooled_moments``), so every rank keeps the same statistics, those of the
concatenated data.
"""

from __future__ import annotations

import torch
import torch.nn as nn

import alf
import alf.nest as nest
from alf.parallel import collectives


class RunningMeanVar(nn.Module):
    """Mean and variance of tensors of shape ``shape`` (elementwise) over all updates.

    Args:
        shape: shape of one sample (``()`` for one scalar statistic).
        speed: None for the exact average over everything seen; else the
            smallest batch weight is ``m / speed`` (see the module doc).
    """

    def __init__(self, shape=(), speed: float | None = None):
        super().__init__()
        if speed is not None and speed <= 0:
            raise ValueError(f"RunningMeanVar: speed must be > 0 or None, got {speed}")
        self._speed = speed
        self._shape = tuple(shape)
        self.register_buffer("mean", torch.zeros(self._shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(self._shape, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    def update(self, x: torch.Tensor) -> None:
        """Merge samples ``x`` ``[..., *shape]`` (all leading dims are samples)."""
        x = x.detach().to(self.mean.device, torch.float64).reshape(-1, *self._shape)
        if not self._shape:
            x = x.reshape(-1)
        m = x.shape[0]
        if collectives.is_active():  # every rank merges the union of the ranks' batches
            batch_mean = x.mean(0) if m else torch.zeros_like(self.mean)
            batch_var = x.var(0, unbiased=False) if m else torch.zeros_like(self.var)
            m, batch_mean, batch_var = collectives.pooled_moments(m, batch_mean, batch_var)
        elif m:
            batch_mean = x.mean(0)
            batch_var = x.var(0, unbiased=False)
        if m == 0:
            return
        weight = m / (float(self.count) + m)
        if self._speed is not None:
            weight = max(weight, min(1.0, m / self._speed))
        delta = batch_mean - self.mean
        if float(self.count) == 0:
            self.var.copy_(batch_var)
        else:
            self.var.mul_(1 - weight).add_(weight * batch_var + weight * (1 - weight) * delta**2)
        self.mean.add_(weight * delta)
        self.count.add_(m)


@alf.configurable
class AdaptiveNormalizer(nn.Module):
    """Elementwise ``(x - mean) / sqrt(var + eps)`` of a nest, with running statistics.

    Args:
        tensor_spec: nest of ``TensorSpec`` of one sample (no batch dims).
        speed: see ``RunningMeanVar`` (None: exact running average).
        zero_mean: subtract the mean (else only divide by the standard deviation).
        variance_epsilon: ``eps`` added to the variance.
        clipping: clip normalized values to ``[-clipping, clipping]`` (0: no clipping).
    """

    def __init__(
        self,
        tensor_spec,
        speed: float | None = None,
        zero_mean: bool = True,
        variance_epsilon: float = 1e-8,
        clipping: float = 0.0,
    ):
        super().__init__()
        if clipping < 0:
            raise ValueError(f"AdaptiveNormalizer: clipping must be >= 0, got {clipping}")
        self._spec = tensor_spec
        self._zero_mean = zero_mean
        self._eps = variance_epsilon
        self._clipping = clipping
        self._stats = nn.ModuleList([self._make_stats(s, speed) for s in nest.flatten(tensor_spec)])

    def _make_stats(self, spec, speed) -> RunningMeanVar:
        return RunningMeanVar(spec.shape, speed)

    @property
    def statistics(self) -> list[RunningMeanVar]:
        """One ``RunningMeanVar`` per leaf of ``tensor_spec`` (``nest.flatten`` order)."""
        return list(self._stats)

    def update(self, tensors) -> None:
        """Merge a nest of ``[..., *shape]`` tensors (leading dims are samples)."""
        for stats, x in zip(self._stats, nest.flatten(tensors)):
            stats.update(x)

    def normalize(self, tensors):
        """Normalize a nest of ``[..., *shape]`` tensors with the current statistics."""
        leaves = [self._normalize(s, x) for s, x in zip(self._stats, nest.flatten(tensors))]
        return nest.pack_sequence_as(tensors, leaves)

    def _normalize(self, stats: RunningMeanVar, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype if x.dtype.is_floating_point else torch.float32
        std = (stats.var + self._eps).sqrt().to(x.device, dtype)
        y = x.to(dtype)
        if self._zero_mean:
            y = y - stats.mean.to(x.device, dtype)
        y = y / std
        if self._clipping > 0:
            y = y.clamp(-self._clipping, self._clipping)
        return y


@alf.configurable
class ScalarAdaptiveNormalizer(AdaptiveNormalizer):
    """``AdaptiveNormalizer`` with one scalar mean and variance per leaf (all elements pooled).

    Args: as ``AdaptiveNormalizer``.
    """

    def _make_stats(self, spec, speed) -> RunningMeanVar:
        return RunningMeanVar((), speed)
