"""Mixed-precision training (``TrainerConfig.enable_amp``).

A ``MixedPrecision`` is the autocast setting of one training device and, for float16, the
``torch.amp.GradScaler`` its gradients need. ``RLAlgorithm.update_from_experience`` runs
``train_step`` and ``calc_loss`` through ``forward`` (under ``torch.autocast``: matrix
products and convolutions in the low-precision dtype, parameters untouched in float32)
and ``Algorithm.update_with_gradient`` makes the gradient step through the scaler when
there is one. Without ``enable_amp`` an algorithm holds None and neither is involved.

Why bfloat16 on the CPU and float16 with a scaler on CUDA: bfloat16 keeps float32's
exponent range, so its gradients neither overflow nor underflow where float32's would not,
and no scaling is needed; float16 (faster on most GPUs) has a range of about 6e-8 to 65504,
so the loss is multiplied by a large scale before ``backward`` (small gradients stay
representable), the gradients are divided by it before they are clipped or used, and an
update whose scaled gradients overflowed is skipped while the scale is halved.
"""

from __future__ import annotations

import torch

from alf.data_structures import LossInfo

#: the key of the grad scaler's state in ``Algorithm.state_dict()`` (never taken by
#: ``init_from``: it is optimizer state)
GRAD_SCALER_KEY = "_grad_scaler"

_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}

#: the device type of the update running under autocast now; None outside one
_autocast_device: str | None = None


def autocast_device() -> str | None:
    """The device type while ``MixedPrecision.forward`` runs (None otherwise): the output
    layers of the projection networks then compute in float32, since logits and log
    probabilities from bfloat16 products are too coarse for e.g. PPO's importance ratios."""
    return _autocast_device


class MixedPrecision:
    """Autocast to ``dtype`` on ``device_type``, with a grad scaler for float16.

    Args:
        device_type: ``'cpu'`` or ``'cuda'`` (the training device's type).
        dtype: ``torch.bfloat16`` or ``torch.float16``.
        init_scale: the grad scaler's first scale (float16 only; torch's default 2**16).

    Attributes:
        scaler: the ``torch.amp.GradScaler`` (None for bfloat16).
    """

    def __init__(self, device_type: str, dtype: torch.dtype, init_scale: float = 2.0**16):
        if dtype not in _DTYPES.values():
            raise ValueError(f"mixed precision runs in bfloat16 or float16, not {dtype}")
        self.device_type = device_type
        self.dtype = dtype
        self.scaler = (
            torch.amp.GradScaler(device_type, init_scale=init_scale)
            if dtype == torch.float16
            else None
        )

    def __repr__(self) -> str:
        scaler = ", grad scaler" if self.scaler is not None else ""
        return f"MixedPrecision({self.device_type}, {self.dtype}{scaler})"

    def autocast(self) -> torch.autocast:
        return torch.autocast(self.device_type, dtype=self.dtype)

    def forward(self, fn, *args):
        """``fn(*args) -> (info, loss_info)`` under autocast, with the loss, the scalar loss
        and the priority of ``loss_info`` taken back to float32 (outside autocast): the
        masked mean, the scaling and ``backward`` then start from float32."""
        global _autocast_device
        outer, _autocast_device = _autocast_device, self.device_type
        try:
            with self.autocast():
                info, loss_info = fn(*args)
        finally:
            _autocast_device = outer
        return info, to_float32(loss_info)


def to_float32(loss_info: LossInfo) -> LossInfo:
    """``loss_info`` with its floating ``loss``, ``scalar_loss`` and ``priority`` in float32."""
    return loss_info._replace(
        loss=_float32(loss_info.loss),
        scalar_loss=_float32(loss_info.scalar_loss),
        priority=_float32(loss_info.priority),
    )


def _float32(x):
    if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float32:
        return x.float()
    return x


def from_config(config, device: torch.device) -> MixedPrecision | None:
    """The ``MixedPrecision`` of ``config`` (a ``TrainerConfig``) on ``device``; None
    without ``enable_amp``."""
    if not config.enable_amp:
        return None
    name = config.amp_dtype or ("float16" if device.type == "cuda" else "bfloat16")
    if name not in _DTYPES:  # (TrainerConfig checks it; a config built otherwise may not)
        raise ValueError(f"TrainerConfig.amp_dtype={name!r}: expected one of {tuple(_DTYPES)}")
    return MixedPrecision(device.type, _DTYPES[name])
