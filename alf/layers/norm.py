r"""``BatchRenorm1d``: batch renormalization (Ioffe 2017), as CrossQ uses it.

Ioffe 2017, "Batch Renormalization: Towards Reducing Minibatch Dependence in
Batch-Normalized Models" (arXiv:1702.03275). In training mode a batch norm
normalizes with the minibatch's moments :math:`\mu_B, \sigma_B^2`, in evaluation
mode with running averages :math:`\mu, \sigma^2`; batch renormalization corrects the
training-mode output towards the evaluation-mode one with

.. math::

    r = \mathrm{clip}_{[1/r_{max},\, r_{max}]}\Big(\frac{\sigma_B}{\sigma}\Big), \qquad
    d = \mathrm{clip}_{[-d_{max},\, d_{max}]}\Big(\frac{\mu_B - \mu}{\sigma}\Big)

(both held constant in the backward pass), :math:`\sigma_B = \sqrt{\sigma_B^2 + \epsilon}`,
:math:`\sigma = \sqrt{\sigma^2 + \epsilon}`, and normalizes with

.. math::

    \hat x = r\,\frac{x - \mu_B}{\sigma_B} + d, \qquad y = \gamma \hat x + \beta,

which equals the evaluation-mode :math:`(x - \mu)/\sigma` wherever :math:`r, d` are not
clipped. (CrossQ's implementations, ``sbx`` and sb3-contrib's ``BatchRenorm1d`` (Bhatt
et al. 2024), write it as a batch norm with the moments :math:`\mu_B - d\sqrt{\sigma_B^2}
/ r` and :math:`\sigma_B^2 / r^2`, which differs only in where :math:`\epsilon` enters;
the form here has a finite gradient where a feature is constant over the batch, as a dead
ReLU unit is, where :math:`\sqrt{\sigma_B^2}` has none.)
:math:`\sigma_B^2` is the biased variance of the batch (the paper's, sbx's and
``torch.nn.BatchNorm1d``'s normalization; sb3-contrib uses the unbiased one, a factor
``m / (m - 1)``). After each training-mode call the running moments move towards the
batch's: :math:`\mu \leftarrow \mu + m(\mu_B - \mu)`, :math:`\sigma^2 \leftarrow
\sigma^2 + m(\sigma_B^2 - \sigma^2)` with ``momentum`` :math:`m`.

**Warm-up.** While ``num_batches_tracked <= warmup_steps`` (the number of earlier
training-mode calls), :math:`r = 1, d = 0`: a plain batch norm, as sb3-contrib's
``warmup_steps``. After it the clipping bounds grow linearly over ``relax_steps``
calls, :math:`r_{max}` from 1 and :math:`d_{max}` from 0 to their final values (Ioffe
2017, section 4: 5k steps of batch norm, then :math:`r_{max}` relaxed to 3 over 40k
steps and :math:`d_{max}` to 5 over 25k); ``relax_steps=0`` (sb3-contrib's and sbx's
schedule) uses the final bounds at once.
"""

from __future__ import annotations

import torch
from torch import nn

import alf


@alf.configurable
@alf.repr_wrapper
class BatchRenorm1d(nn.Module):
    """Batch renormalization of ``[B, C]`` or ``[B, C, L]`` inputs over all dims but ``C``
    (the module doc), a drop-in for ``torch.nn.BatchNorm1d(num_features)``.

    State: the parameters ``weight`` :math:`\\gamma` and ``bias`` :math:`\\beta`
    ``[C]`` (with ``affine``), the buffers ``running_mean``, ``running_var`` ``[C]`` and
    ``num_batches_tracked`` (training-mode calls so far), all in ``state_dict``.

    Args:
        num_features: ``C``.
        eps: :math:`\\epsilon`, added to the variances.
        momentum: :math:`m` of the running moments' update (torch's convention: the
            weight of the new batch).
        affine: learn :math:`\\gamma, \\beta` (else :math:`y = \\hat x`).
        warmup_steps: training-mode calls normalized as a plain batch norm.
        r_max: the final bound of :math:`r` (``>= 1``).
        d_max: the final bound of :math:`|d|` (``>= 0``).
        relax_steps: calls after the warm-up over which the bounds grow linearly to
            ``r_max`` and ``d_max`` (0: at once).
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-3,
        momentum: float = 0.01,
        affine: bool = True,
        warmup_steps: int = 100_000,
        r_max: float = 3.0,
        d_max: float = 5.0,
        relax_steps: int = 0,
    ):
        super().__init__()
        if r_max < 1.0 or d_max < 0.0 or warmup_steps < 0 or relax_steps < 0:
            raise ValueError(
                f"BatchRenorm1d: need r_max >= 1, d_max >= 0 and non-negative steps, got "
                f"r_max={r_max}, d_max={d_max}, warmup_steps={warmup_steps}, "
                f"relax_steps={relax_steps}"
            )
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.warmup_steps = warmup_steps
        self.r_max = r_max
        self.d_max = d_max
        self.relax_steps = relax_steps
        if affine:
            self.weight = nn.Parameter(torch.empty(num_features))
            self.bias = nn.Parameter(torch.empty(num_features))
        else:
            self.weight = self.bias = None
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.zeros((), dtype=torch.long))
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        self.running_mean.zero_()
        self.running_var.fill_(1.0)
        self.num_batches_tracked.zero_()
        self._steps = 0  # num_batches_tracked on the host: no device sync per call

    def reset_parameters(self) -> None:
        """Running moments 0 and 1, no call tracked, :math:`\\gamma = 1, \\beta = 0`."""
        self.reset_running_stats()
        if self.affine:
            nn.init.ones_(self.weight)
            nn.init.zeros_(self.bias)

    def clip_bounds(self, step: int) -> tuple[float, float]:
        """``(r_max, d_max)`` in force at training-mode call ``step`` (0-based): ``(1, 0)``
        during the warm-up (a plain batch norm), then relaxed (module doc)."""
        progress = step - self.warmup_steps
        if progress <= 0:
            return 1.0, 0.0
        fraction = 1.0 if self.relax_steps == 0 else min(1.0, progress / self.relax_steps)
        return 1.0 + (self.r_max - 1.0) * fraction, self.d_max * fraction

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim not in (2, 3) or x.shape[1] != self.num_features:
            raise ValueError(
                f"BatchRenorm1d: input of shape {tuple(x.shape)}, expected [B, "
                f"{self.num_features}] or [B, {self.num_features}, L]"
            )
        if self.training:  # x̂ = (x - mean) * scale + shift
            mean, scale, shift = self._training_normalization(x, (0,) if x.ndim == 2 else (0, 2))
        else:
            mean, scale, shift = self.running_mean, torch.rsqrt(self.running_var + self.eps), None
        if self.affine:  # y = x * (γ scale) + (β + γ (shift - mean scale))
            shift = self.bias if shift is None else torch.addcmul(self.bias, self.weight, shift)
            scale = scale * self.weight
        offset = -mean * scale if shift is None else shift - mean * scale
        if x.ndim == 3:
            scale, offset = scale[:, None], offset[:, None]
        return torch.addcmul(offset, x, scale)

    def _training_normalization(self, x, dims):
        """``(μ_B, r / σ_B, d)`` of ``x`` (``d`` None during the warm-up); the running
        moments and the call count updated."""
        # two passes (the centred squares' mean) are several times faster than var_mean
        # along the batch dim of a [B, C] (or [R, B, C]) tensor, forward and backward
        batch_mean = x.mean(dims, keepdim=True)
        batch_var = (x - batch_mean).square().mean(dims)
        batch_mean = batch_mean.squeeze(dims)
        scale = torch.rsqrt(batch_var + self.eps)
        r_max, d_max = self.clip_bounds(self._steps)
        shift = None
        if r_max > 1.0 or d_max > 0.0:
            with torch.no_grad():
                running_std = (self.running_var + self.eps).sqrt()
                r = (running_std * scale).reciprocal().clamp(1.0 / r_max, r_max)
                shift = ((batch_mean - self.running_mean) / running_std).clamp(-d_max, d_max)
            scale = scale * r
        with torch.no_grad():
            self.running_mean.lerp_(batch_mean.detach(), self.momentum)
            self.running_var.lerp_(batch_var.detach(), self.momentum)
            self.num_batches_tracked += 1
        self._steps += 1
        return batch_mean, scale, shift

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._steps = int(self.num_batches_tracked)
