"""Projection networks whose distributions live inside the action bounds by construction.

- ``BetaProjectionNetwork``: an independent Beta per action dim, stretched from ``[0, 1]``
  onto ``[minimum, maximum]``;
- ``TruncatedProjectionNetwork``: a location-scale distribution (``TruncatedNormal`` by
  default) truncated to ``[minimum, maximum]``.

``alf.networks.projection_networks`` re-exports them (ALF's import path).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn as nn

import alf
from alf.networks.network import Network
from alf.networks.projection_layers import action_bounds, check_parallelism, output_head
from alf.tensor_specs import TensorSpec
from alf.utils import dist_utils, math_ops

# softplus(x) == 1 (a Beta(1, 1) is the uniform density)
_SOFTPLUS_INV_1 = math.log(math.e - 1.0)


def _clip_row_norm(grad: torch.Tensor, max_norm: float) -> torch.Tensor:
    """``grad`` with every ``[..., :]`` row scaled down to an L2 norm of at most ``max_norm``."""
    return grad / (grad.norm(dim=-1, keepdim=True) / max_norm).clamp_min(1.0)


@alf.configurable
class BetaProjectionNetwork(Network):
    """One linear layer producing independent Beta distributions over the action bounds.

    ``[c1, c0] = activation(W x + b) + min_concentration`` (``2 A`` outputs for ``A`` action
    dims), then ``Beta(c1, c0)`` per dim (``dist_utils.DiagMultivariateBeta``), mapped by
    ``minimum + (maximum - minimum) * X`` onto the bounds
    (``dist_utils.AffineTransformedDistribution``, with the exact entropy; skipped for
    ``[0, 1]`` bounds). The defaults start at ``Beta(1, 1)``, the uniform density: zero
    weights (``projection_output_init_gain=0``) and the bias with ``softplus(b) = 1``.

    Args:
        input_size: size ``N`` of the ``[B, N]`` input.
        action_spec: a bounded continuous 1-D ``TensorSpec`` with finite bounds.
        parallelism: ``n`` replicas of the layer: batch shape ``[B, n]``.
        activation: makes the concentrations positive (softplus).
        min_concentration: added to the concentrations (1 keeps the density unimodal and
            finite at the bounds).
        projection_output_init_gain: gain of the initial weights.
        bias_init_value: the initial bias (``softplus^-1(1)`` by default).
        grad_clip: the gradient reaching the ``[B, 2A]`` concentrations is scaled row by
            row to an L2 norm of at most ``grad_clip``; None: not clipped.
        name: name of the network.
    """

    def __init__(
        self,
        input_size,
        action_spec,
        parallelism: int | None = None,
        activation: Callable = nn.functional.softplus,
        min_concentration: float = 0.0,
        projection_output_init_gain: float = 0.0,
        bias_init_value: float = _SOFTPLUS_INV_1,
        grad_clip: float | None = 0.01,
        name: str = "BetaProjectionNetwork",
    ):
        super().__init__(TensorSpec((input_size,)), name=name)
        if not action_spec.is_continuous or action_spec.ndim != 1:
            raise ValueError(f"{name} needs a continuous 1-D action spec, got {action_spec}")
        check_parallelism(name, parallelism, action_spec)
        if min_concentration < 0:
            raise ValueError(f"{name}: min_concentration must be >= 0, got {min_concentration}")
        if grad_clip is not None and not grad_clip > 0:
            raise ValueError(f"{name}: grad_clip must be positive or None, got {grad_clip}")
        low, high = action_bounds(name, action_spec, "BetaProjectionNetwork")
        self._unit = bool(torch.all(low == 0) and torch.all(high == 1))
        self.register_buffer("_action_low", low, False)
        self.register_buffer("_action_range", high - low, False)
        self._parallelism = parallelism
        self._min_concentration = float(min_concentration)
        self._grad_clip = grad_clip
        self._head = output_head(
            input_size,
            2 * action_spec.shape[0],
            projection_output_init_gain,
            activation=activation,
            bias_value=bias_init_value,
            parallelism=parallelism,
        )
        self._concentration_projection_layer = self._head.layer

    def make_parallel(self, n: int) -> BetaProjectionNetwork:
        """A network of these arguments with ``n`` replicas (``parallelism=n``)."""
        if self._parallelism is not None:
            raise ValueError(f"{self._name}: make_parallel of a network already parallel")
        return type(self)(**dict(self.saved_args, parallelism=n, name="parallel_" + self._name))

    def forward(self, inputs, state=()):
        """``([B, N] features, state) -> (distribution with batch shape [B], state)``."""
        concentration = self._head(inputs)
        if self._min_concentration:
            concentration = concentration + self._min_concentration
        if self._grad_clip is not None and concentration.requires_grad:
            clip = self._grad_clip
            concentration.register_hook(lambda g: _clip_row_norm(g, clip))
        concentration1, concentration0 = concentration.chunk(2, dim=-1)
        dist = dist_utils.DiagMultivariateBeta(concentration1, concentration0)
        if not self._unit:
            dist = dist_utils.AffineTransformedDistribution(
                dist, self._action_low, self._action_range
            )
        return dist, state


@alf.configurable
class TruncatedProjectionNetwork(Network):
    """Linear layers producing a distribution truncated to the action bounds.

    ``loc = (max + min) / 2 + (max - min) / 2 * loc_transform(activation(W_l x + b_l))``
    (inside the bounds, for numerical stability; the truncation bounds the samples);
    ``scale = scale_transform(activation(W_s x + b_s))`` when ``state_dependent_scale``,
    else ``scale_transform(p)`` for a learned per-dim parameter ``p`` (initially
    ``scale_bias_initializer_value``), clamped to ``[min_scale, max_scale]``. The
    distribution is ``dist_ctor(loc=loc, scale=scale, lower_bound=minimum,
    upper_bound=maximum)``.

    Args:
        input_size: size ``N`` of the ``[B, N]`` input.
        action_spec: a bounded continuous 1-D ``TensorSpec`` with finite bounds.
        activation: applied to the head outputs.
        projection_output_init_gain: gain of the initial weights.
        scale_bias_initializer_value: initial scale bias (or parameter) before
            ``scale_transform``.
        state_dependent_scale: compute the scale from the input instead of a parameter.
        loc_transform: maps the loc head's output into ``[-1, 1]`` (tanh).
        scale_transform: maps the raw scale to a positive one (softplus); identity if None.
        min_scale: the scale's lower clamp; None: none.
        max_scale: the scale's upper clamp; None: none.
        dist_ctor: ``dist_utils.TruncatedNormal`` or ``dist_utils.TruncatedCauchy``, or a
            constructor with their arguments.
        name: name of the network.
    """

    def __init__(
        self,
        input_size,
        action_spec,
        activation: Callable = math_ops.identity,
        projection_output_init_gain: float = 0.3,
        scale_bias_initializer_value: float = 0.0,
        state_dependent_scale: bool = False,
        loc_transform: Callable = torch.tanh,
        scale_transform: Callable | None = nn.functional.softplus,
        min_scale: float | None = None,
        max_scale: float | None = None,
        dist_ctor: Callable = dist_utils.TruncatedNormal,
        name: str = "TruncatedProjectionNetwork",
    ):
        super().__init__(TensorSpec((input_size,)), name=name)
        if not action_spec.is_continuous or action_spec.ndim != 1:
            raise ValueError(f"{name} needs a continuous 1-D action spec, got {action_spec}")
        if min_scale is not None and max_scale is not None and not min_scale <= max_scale:
            raise ValueError(f"{name}: min_scale must not exceed max_scale, got {min_scale}")
        low, high = action_bounds(name, action_spec, "TruncatedProjectionNetwork")
        self.register_buffer("_action_low", low, False)
        self.register_buffer("_action_high", high, False)
        self.register_buffer("_action_means", (high + low) / 2, False)
        self.register_buffer("_action_magnitudes", (high - low) / 2, False)
        self._loc_transform = loc_transform
        self._scale_transform = scale_transform or math_ops.identity
        self._min_scale, self._max_scale = min_scale, max_scale
        self._dist_ctor = dist_ctor
        num_actions = action_spec.shape[0]
        gain = projection_output_init_gain
        self._loc_head = output_head(input_size, num_actions, gain, activation=activation)
        self._loc_projection_layer = self._loc_head.layer
        if state_dependent_scale:
            self._scale_head = output_head(
                input_size,
                num_actions,
                gain,
                activation=activation,
                bias_value=scale_bias_initializer_value,
            )
            self._scale_projection_layer = self._scale_head.layer
        else:
            self._scale_head = self._scale_projection_layer = None
            self._scale = nn.Parameter(
                torch.full((num_actions,), float(scale_bias_initializer_value))
            )

    def forward(self, inputs, state=()):
        """``([B, N] features, state) -> (distribution with batch shape [B], state)``."""
        loc = torch.addcmul(
            self._action_means, self._action_magnitudes, self._loc_transform(self._loc_head(inputs))
        )
        raw = self._scale if self._scale_head is None else self._scale_head(inputs)
        scale = self._scale_transform(raw)
        if self._min_scale is not None or self._max_scale is not None:
            scale = scale.clamp(min=self._min_scale, max=self._max_scale)
        if scale.shape != loc.shape:
            scale = scale.expand(loc.shape)
        dist = self._dist_ctor(
            loc=loc, scale=scale, lower_bound=self._action_low, upper_bound=self._action_high
        )
        return dist, state
