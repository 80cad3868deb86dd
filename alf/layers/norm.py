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

from typing import NamedTuple

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
        if x.ndim == 2:
            return self._normalize(x, _Layout((0,), (1, -1)))
        return self._normalize(x, _Layout((0, 2), (1, -1, 1)))

    def forward_replicas(self, x: torch.Tensor) -> torch.Tensor:
        """Normalize ``[R, B, n]`` (``R`` critics' features, ``R * n = C``) as ``forward``
        does the same values laid out ``[B, R * n]`` (channel ``i * n + j`` is replica
        ``i``'s feature ``j``), without moving them."""
        r, n = (x.shape[0], x.shape[-1]) if x.ndim == 3 else (0, 0)
        if r * n != self.num_features:
            raise ValueError(
                f"BatchRenorm1d.forward_replicas: input of shape {tuple(x.shape)}, expected "
                f"[R, B, n] with R * n = {self.num_features}"
            )
        return self._normalize(x, _Layout((1,), (r, 1, n)))

    def _normalize(self, x: torch.Tensor, layout: _Layout) -> torch.Tensor:
        if self.training:
            return self._training_forward(x, layout)
        scale = torch.rsqrt(self.running_var + self.eps)
        offset = -self.running_mean * scale
        if self.affine:  # y = x (γ scale) + (β - γ mean scale)
            scale, offset = scale * self.weight, torch.addcmul(self.bias, self.weight, offset)
        return torch.addcmul(offset.view(layout.channels), x, scale.view(layout.channels))

    def _training_forward(self, x: torch.Tensor, layout: _Layout) -> torch.Tensor:
        """``y = γ (r (x - μ_B) / σ_B + d) + β``, its gradient written out (``_Renorm``);
        the running moments and the call count updated."""
        with torch.no_grad():
            # two passes (the centred squares' mean): several times faster than var_mean
            # along the batch dim of a [B, C] tensor
            batch_mean = x.mean(layout.dims, keepdim=True)
            batch_var = (x - batch_mean).square().mean(layout.dims).reshape(-1)
            batch_mean = batch_mean.reshape(-1)
            inv_std = torch.rsqrt(batch_var + self.eps)
            r, d = self._renorm_correction(batch_mean, inv_std)
            self.running_mean.lerp_(batch_mean, self.momentum)
            self.running_var.lerp_(batch_var, self.momentum)
            self.num_batches_tracked += 1
        self._steps += 1
        return _Renorm.apply(x, self.weight, self.bias, batch_mean, inv_std, r, d, layout)

    def _renorm_correction(self, batch_mean, inv_std):
        """``(r, d)`` ``[C]`` at this call (None, None: a plain batch norm, in the warm-up)."""
        r_max, d_max = self.clip_bounds(self._steps)
        if r_max <= 1.0 and d_max <= 0.0:
            return None, None
        running_std = (self.running_var + self.eps).sqrt()
        r = (running_std * inv_std).reciprocal().clamp(1.0 / r_max, r_max)
        d = ((batch_mean - self.running_mean) / running_std).clamp(-d_max, d_max)
        return r, d

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._steps = int(self.num_batches_tracked)


class _Layout(NamedTuple):
    """Where an input's channels are: ``dims`` the batch dims reduced over, ``channels``
    the shape a per-channel ``[C]`` vector takes to broadcast against the input."""

    dims: tuple[int, ...]
    channels: tuple[int, ...]


class _Renorm(torch.autograd.Function):
    r""":math:`y = \gamma (r \hat x_0 + d) + \beta`, :math:`\hat x_0 = (x - \mu_B)
    / \sigma_B`, with :math:`\mu_B, \sigma_B` the batch's (given, computed from ``x``)
    and :math:`r, d` constants (None: 1 and 0), and the batch norm's gradient written out:
    with :math:`k = \gamma r / \sigma_B` and means over the batch,

    .. math::

        \partial x = k \big(\partial y - \overline{\partial y} - \hat x_0\,
        \overline{\partial y\, \hat x_0}\big), \quad
        \partial\gamma = \textstyle\sum \partial y\,(r \hat x_0 + d), \quad
        \partial\beta = \textstyle\sum \partial y.

    The backward pass makes four passes over ``[B, C]`` (the sums of :math:`\partial y`
    and :math:`\partial y\, x`, then two fused multiply-adds), fewer than autograd through
    the moments makes, and none when ``x`` needs no gradient (an input normalization).
    """

    @staticmethod
    def forward(ctx, x, weight, bias, mean, inv_std, r, d, layout):
        scale = inv_std if r is None else inv_std * r
        offset = -mean * scale if d is None else d - mean * scale
        if weight is not None:  # y = x (γ scale) + (β + γ offset)
            scale, offset = scale * weight, torch.addcmul(bias, weight, offset)
        ctx.layout = layout
        ctx.save_for_backward(x, weight, mean, inv_std, r, d)
        return torch.addcmul(offset.view(layout.channels), x, scale.view(layout.channels))

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, inv_std, r, d = ctx.saved_tensors
        dims, channels = ctx.layout
        count = x.numel() // mean.numel()
        sum_dy = dy.sum(dims).reshape(-1)
        sum_dy_x = (dy * x).sum(dims).reshape(-1)
        sum_dy_xhat = inv_std * (sum_dy_x - mean * sum_dy)  # Σ ∂y x̂_0
        k = inv_std if r is None else inv_std * r
        if weight is not None:
            k = k * weight
        grad_x = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:  # ∂x = k ∂y + slope x + intercept
            slope = -k * inv_std * sum_dy_xhat / count
            intercept = -k * sum_dy / count - slope * mean
            grad_x = torch.addcmul(intercept.view(channels), dy, k.view(channels))
            grad_x.addcmul_(x, slope.view(channels))
        if weight is not None:
            grad_weight = sum_dy_xhat if r is None else r * sum_dy_xhat
            grad_weight = grad_weight if d is None else grad_weight + d * sum_dy
            grad_bias = sum_dy
        return grad_x, grad_weight, grad_bias, None, None, None, None, None
