"""``AdamTF``: Adam with TensorFlow's placement of epsilon (ALF's ``alf.optimizers.AdamTF``).

torch's Adam divides the bias-corrected moments, ``m_hat / (sqrt(v_hat) + eps)``; TF's
Adam (which ALF's confs were tuned with) folds the bias correction into the step size and
adds ``eps`` to the uncorrected ``sqrt(v)``::

    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g^2
    lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t)
    theta = theta - lr_t * m / (sqrt(v) + eps)

which equals torch's update with ``eps * sqrt(1 - b2^t)`` in place of ``eps``: early in
training (small ``t``) TF's epsilon weighs far less. Its default ``eps`` is TF's, 1e-7.
"""

from __future__ import annotations

import math

import torch

import alf
from alf.configuration.argtypes import (
    LearningRate,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    Probability,
)
from alf.optimizers.capacity import CapacityRatio, capacity_args
from alf.optimizers.optimizers import _factory_spec


class AdamTFOptimizer(torch.optim.Optimizer):
    """The torch optimizer of ``AdamTF`` (see the module doc for the update).

    Args:
        params: parameters or parameter groups.
        lr: learning rate.
        betas: ``(b1, b2)``.
        eps: TF's epsilon, added to ``sqrt(v)``.
        weight_decay: L2 coefficient added to the gradient (as torch's Adam).
        amsgrad: use the running maximum of ``v`` (AMSGrad).
    """

    def __init__(
        self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-7, weight_decay=0.0, amsgrad=False
    ):
        if lr < 0 or eps < 0 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"AdamTF: invalid lr {lr}, eps {eps} or betas {betas}")
        defaults = dict(
            lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad
        )
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is not None:
                    self._update(param, group, beta1, beta2)
        return loss

    def _update(self, param, group, beta1, beta2):
        grad = param.grad
        if group["weight_decay"]:
            grad = grad.add(param, alpha=group["weight_decay"])
        state = self.state[param]
        if not state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(param)
            state["exp_avg_sq"] = torch.zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = torch.zeros_like(param)
        state["step"] += 1
        step = state["step"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        if group["amsgrad"]:
            torch.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
            exp_avg_sq = state["max_exp_avg_sq"]
        lr_t = group["lr"] * math.sqrt(1 - beta2**step) / (1 - beta1**step)
        denom = exp_avg_sq.sqrt().add_(group["eps"])
        param.addcdiv_(exp_avg, denom, value=-lr_t)


@alf.configurable
def AdamTF(  # noqa: N802 (ALF's public name)
    lr: LearningRate = 1e-3,
    betas: tuple[Probability, Probability] = (0.9, 0.999),
    eps: NonNegativeFloat = 1e-7,
    weight_decay: NonNegativeFloat = 0.0,
    amsgrad: bool = False,
    gradient_clipping: PositiveFloat | None = None,
    clip_by_global_norm: bool = True,
    name: str | None = None,
    capacity_ratio: CapacityRatio = 1.0,
    min_capacity: NonNegativeInt = 8192,
    masked_out_value: float | None = None,
):
    """Adam with TF's epsilon placement (module doc); ALF's ``alf.optimizers.AdamTF``.
    See ``OptimizerSpec`` for the clipping and capacity arguments."""
    call = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)
    call.update(gradient_clipping=gradient_clipping, clip_by_global_norm=clip_by_global_norm)
    call.update(capacity_args(capacity_ratio, min_capacity, masked_out_value))
    return _factory_spec(AdamTF, AdamTFOptimizer, call, name, betas=tuple(betas))
