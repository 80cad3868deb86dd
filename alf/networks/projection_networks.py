"""Projection networks: map a ``[B, N]`` feature to a distribution over one action.

``CategoricalProjectionNetwork`` serves discrete specs; the continuous ones live in
``normal_projection_networks`` (``NormalProjectionNetwork``,
``StableNormalProjectionNetwork``, ``CauchyProjectionNetwork``) and
``bounded_projection_networks`` (``BetaProjectionNetwork``, ``TruncatedProjectionNetwork``)
and are importable from here too, ALF's import path. Distributions are built with
torch's argument validation off; ``log_prob`` sums over the action dims, so it is ``[B]``
for any action shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
import torch.distributions as td

import alf
from alf.networks.bounded_projection_networks import (
    BetaProjectionNetwork,
    TruncatedProjectionNetwork,
)
from alf.networks.network import Network
from alf.networks.normal_projection_networks import (
    CauchyProjectionNetwork,
    NormalProjectionNetwork,
    StableNormalProjectionNetwork,
)
from alf.networks.projection_layers import output_head
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import dist_utils

__all__ = [
    "BetaProjectionNetwork",
    "CategoricalProjectionNetwork",
    "CauchyProjectionNetwork",
    "NormalProjectionNetwork",
    "StableNormalProjectionNetwork",
    "TruncatedProjectionNetwork",
]


def _uniform_minimum(action_spec: BoundedTensorSpec):
    """The spec's minimum as an int if it is the same for all dims, else a tensor."""
    minimum = np.broadcast_to(action_spec.minimum, tuple(action_spec.shape))
    if minimum.size == 0 or np.all(minimum == minimum.flat[0]):
        return int(np.asarray(action_spec.minimum).flat[0])
    return torch.as_tensor(minimum.copy(), dtype=torch.int64)


@alf.configurable
class CategoricalProjectionNetwork(Network):
    """A linear layer producing categorical logits for a discrete action spec.

    For a scalar spec the output is a ``dist_utils.Categorical`` (a ``ShiftedCategorical``
    when ``minimum != 0``, so samples and modes lie in ``[minimum, maximum]``);
    for a vector spec it is an ``Independent`` over the action dims, which must
    all have the same number of values.

    Args:
        input_size: size ``N`` of the ``[B, N]`` input.
        action_spec: a discrete ``BoundedTensorSpec``.
        fc_ctor: ALF's constructor of the logits layer (e.g. ``alf.layers.FC`` or a noisy
            layer), called as ``fc_ctor(input_size, n, kernel_init_gain=...,
            weight_opt_args=..., bias_opt_args=...)``; None: an ``nn.Linear`` initialized as
            ``alf.layers.FC`` would be.
        logits_init_output_factor: gain of the initial logits weights (small, so
            the initial policy is close to uniform).
        weight_opt_args: optimizer arguments of the logits weight (``weight.opt_args``).
        bias_opt_args: optimizer arguments of the logits bias.
        kernel_initializer: ``init(weight)`` of the logits layer, instead of the variance
            scaling by ``logits_init_output_factor`` (e.g. SB3's orthogonal init, gain 0.01).
        name: name of the network.
    """

    def __init__(
        self,
        input_size,
        action_spec,
        fc_ctor: Callable | None = None,
        logits_init_output_factor: float = 0.1,
        weight_opt_args: dict | None = None,
        bias_opt_args: dict | None = None,
        kernel_initializer: Callable | None = None,
        name: str = "CategoricalProjectionNetwork",
    ):
        super().__init__(TensorSpec((input_size,)), name=name)
        if not action_spec.is_discrete or not isinstance(action_spec, BoundedTensorSpec):
            raise ValueError(f"{name} needs a bounded discrete action spec, got {action_spec}")
        num_values = np.unique(
            np.broadcast_to(action_spec.maximum - action_spec.minimum + 1, action_spec.shape)
        )
        if len(num_values) != 1 or num_values[0] < 1:
            raise ValueError(
                f"{name}: every action dim needs the same number (>= 1) of values, got "
                f"{action_spec}"
            )
        self._action_spec = action_spec
        self._num_values = int(num_values[0])
        self._output_shape = tuple(action_spec.shape) + (self._num_values,)
        self._event_ndims = action_spec.ndim
        self._minimum = _uniform_minimum(action_spec)
        self._head = output_head(
            input_size,
            math.prod(self._output_shape),
            logits_init_output_factor,
            kernel_initializer=kernel_initializer,
            fc_ctor=fc_ctor,
            weight_opt_args=weight_opt_args,
            bias_opt_args=bias_opt_args,
        )
        self._projection_layer = self._head.layer

    def forward(self, inputs, state=()):
        """``([B, N] features, state) -> (distribution with batch shape [B], state)``."""
        logits = self._head(inputs)
        if self._event_ndims:
            logits = logits.reshape(inputs.shape[:-1] + self._output_shape)
        if isinstance(self._minimum, int) and self._minimum == 0:
            dist = dist_utils.Categorical(logits=logits)
        else:
            dist = dist_utils.ShiftedCategorical(logits=logits, minimum=self._minimum)
        if self._event_ndims:
            dist = td.Independent(dist, self._event_ndims, validate_args=False)
        return dist, state
