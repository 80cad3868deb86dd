"""Weight initializers: variance scaling with a gain that accounts for the activation."""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

import alf
from alf.utils import math_ops

# Standard deviation of a standard normal truncated to [-2, 2].
_TRUNCATED_NORMAL_STD = 0.87962566103423978

# sqrt(1 / E[f(z)^2]), z ~ N(0, 1), in closed form for common activations.
_KNOWN_GAINS = {
    math_ops.identity: 1.0,
    torch.relu: math.sqrt(2.0),
    torch.relu_: math.sqrt(2.0),
    F.relu: math.sqrt(2.0),
    F.relu_: math.sqrt(2.0),
}


@functools.lru_cache(maxsize=64)
def _numerical_gain(nonlinearity) -> float:
    """``1 / sqrt(E[f(z)^2])`` for ``z ~ N(0, 1)``, by quadrature on a fine grid.

    This keeps the second moment of the activations at 1 from layer to layer when
    the pre-activations are standard normal (He et al. 2015, "Delving Deep into
    Rectifiers", section 2.2, generalized to any ``f``); for relu it is sqrt(2).
    """
    z = torch.linspace(-8.0, 8.0, 160001, dtype=torch.float64)
    density = torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    with torch.no_grad():
        fz = nonlinearity(z.clone()).to(torch.float64)
    second_moment = torch.trapezoid(fz * fz * density, z).item()
    if not second_moment > 0:
        raise ValueError(f"Cannot compute a gain for {nonlinearity}: E[f(z)^2] = {second_moment}")
    return 1.0 / math.sqrt(second_moment)


def calculate_gain(nonlinearity) -> float:
    """The gain that keeps ``E[f(x)^2] = 1`` for standard normal ``x`` (1 for identity).

    Closed form for identity and relu, numerical integration for anything else
    (e.g. tanh gives about 1.59, softplus about 0.77). ``None`` means identity.
    """
    if nonlinearity is None:
        return 1.0
    gain = _KNOWN_GAINS.get(nonlinearity)
    return gain if gain is not None else _numerical_gain(nonlinearity)


def _fans(tensor: torch.Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight ``[out, in, *kernel]`` (a 1-D tensor has fan 1 / size)."""
    if tensor.ndim < 2:
        return 1, tensor.numel()
    receptive_field = math.prod(tensor.shape[2:]) if tensor.ndim > 2 else 1
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def variance_scaling_init(
    tensor: torch.Tensor,
    gain: float = 1.0,
    mode: str = "fan_in",
    distribution: str = "truncated_normal",
    calc_gain_after_activation: bool = True,
    nonlinearity=torch.relu,
    transposed: bool = False,
) -> torch.Tensor:
    """Fill ``tensor`` in place with zero-mean values of std ``gain' / sqrt(fan)``.

    ``gain' = gain * calculate_gain(nonlinearity)`` when ``calc_gain_after_activation``
    (so a relu layer gets ``sqrt(2) * gain``, He et al. 2015) and ``gain`` otherwise;
    ``fan`` is ``fan_in``, ``fan_out`` or their average (``mode='fan_avg'``), as in
    Glorot & Bengio 2010. The three distributions all have exactly that std:

    - ``'truncated_normal'``: a normal cut at two of its own stds, rescaled
      (divided by 0.8796, the std of a unit normal truncated to [-2, 2]);
    - ``'uniform'``: ``U(-sqrt(3) std, sqrt(3) std)``;
    - ``'untruncated_normal'``: ``N(0, std^2)``.

    Args:
        tensor: the weight, ``[out, in]`` for linear and ``[out, in, kh, kw]`` for conv.
        gain: extra multiplicative gain (e.g. a small value for output layers).
        mode: ``'fan_in'``, ``'fan_out'`` or ``'fan_avg'``.
        distribution: ``'truncated_normal'``, ``'uniform'`` or ``'untruncated_normal'``.
        calc_gain_after_activation: multiply ``gain`` by the activation's gain.
        nonlinearity: the activation following this layer (identity when None).
        transposed: the weight is ``[in, out, ...]`` (transposed conv): swap the fans.

    Returns:
        ``tensor`` (filled in place).
    """
    fan_in, fan_out = _fans(tensor)
    if transposed:
        fan_in, fan_out = fan_out, fan_in
    if mode == "fan_in":
        size = fan_in
    elif mode == "fan_out":
        size = fan_out
    elif mode == "fan_avg":
        size = (fan_in + fan_out) / 2.0
    else:
        raise ValueError(f"Unknown mode {mode!r}: use 'fan_in', 'fan_out' or 'fan_avg'")
    if calc_gain_after_activation:
        gain = gain * calculate_gain(nonlinearity)
    std = gain / math.sqrt(max(1.0, size))
    with torch.no_grad():
        if std == 0.0:  # gain 0 (e.g. ALF's Beta projection): zeros, whatever the distribution
            return tensor.zero_()
        if distribution == "truncated_normal":
            std = std / _TRUNCATED_NORMAL_STD
            return torch.nn.init.trunc_normal_(tensor, 0.0, std, -2.0 * std, 2.0 * std)
        if distribution == "uniform":
            limit = math.sqrt(3.0) * std
            return tensor.uniform_(-limit, limit)
        if distribution == "untruncated_normal":
            return tensor.normal_(0.0, std)
    raise ValueError(
        f"Unknown distribution {distribution!r}: use 'truncated_normal', 'uniform' "
        "or 'untruncated_normal'"
    )


@alf.configurable
def orthogonal_init(tensor: torch.Tensor, gain: float = math.sqrt(2)) -> torch.Tensor:
    """Orthogonal initialization (Saxe et al. 2014) scaled by ``gain``, in place.

    The default gain √2 with output-layer gains 0.01 (policy) and 1 (value) is the
    scheme of OpenAI baselines / Stable-Baselines3 PPO ("The 37 implementation
    details of PPO", Huang et al. 2022), used by alf's PPO examples.
    """
    return torch.nn.init.orthogonal_(tensor, gain=gain)


@alf.configurable
def torch_default_init(tensor: torch.Tensor) -> torch.Tensor:
    """PyTorch's default ``nn.Linear`` weight init, ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``,
    in place (what Stable-Baselines3 uses with ``ortho_init=False``)."""
    return torch.nn.init.kaiming_uniform_(tensor, a=math.sqrt(5))
