"""The one place alf chooses the training device.

Environments always produce CPU tensors; algorithms live on ``get_device()``
and the rollout moves time steps there (a no-op on the CPU).
"""

from __future__ import annotations

import torch

_device = {"device": torch.device("cpu")}


def set_device(device: str | torch.device | None) -> torch.device:
    """Use ``device`` for training; None picks CUDA when available, else the CPU."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"Device '{device}' requested but CUDA is not available")
    _device["device"] = device
    return device


def get_device() -> torch.device:
    """The training device (CPU unless ``set_device`` chose otherwise)."""
    return _device["device"]


def to_device(nest_value, device: torch.device | None = None):
    """Move every tensor leaf of ``nest_value`` to ``device`` (default: the training device)."""
    import alf.nest as nest

    device = device or _device["device"]
    if device.type == "cpu":
        return nest_value  # environment tensors are already on the CPU
    return nest.map_structure(
        lambda x: x.to(device, non_blocking=True) if isinstance(x, torch.Tensor) else x,
        nest_value,
    )


def to_cpu(nest_value):
    """Detached CPU copies of the tensor leaves of ``nest_value``, e.g. an action for the
    environment or rollout data for the replay buffer (as is while training on the CPU)."""
    if isinstance(nest_value, torch.Tensor) and nest_value.is_cpu:
        return nest_value  # the common case, without a tree walk (this runs every step)
    if _device["device"].type == "cpu":
        return nest_value
    import alf.nest as nest

    return nest.map_structure(
        lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) and not x.is_cpu else x,
        nest_value,
    )
