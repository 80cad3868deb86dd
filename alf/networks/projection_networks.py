"""Projection networks: map a ``[B, N]`` feature to a distribution over one action.

``CategoricalProjectionNetwork`` serves discrete specs, ``NormalProjectionNetwork``
continuous ones. Distributions are built with torch's argument validation off;
``log_prob`` sums over the action dims, so it is ``[B]`` for any action shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
import torch.distributions as td
import torch.nn as nn

import alf
from alf.initializers import variance_scaling_init
from alf.networks.network import LinearOp, Network
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import dist_utils, math_ops


def _projection_layer(
    input_size, output_size, gain, activation, bias_value=0.0, kernel_initializer=None
):
    layer = nn.Linear(input_size, output_size)
    if kernel_initializer is None:
        variance_scaling_init(layer.weight.data, gain=gain, nonlinearity=activation)
    else:
        kernel_initializer(layer.weight.data)
    nn.init.constant_(layer.bias.data, bias_value)
    return layer


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
        logits_init_output_factor: gain of the initial logits weights (small, so
            the initial policy is close to uniform).
        kernel_initializer: ``init(weight)`` of the logits layer, instead of the variance
            scaling by ``logits_init_output_factor`` (e.g. SB3's orthogonal init, gain 0.01).
        name: name of the network.
    """

    def __init__(
        self,
        input_size,
        action_spec,
        logits_init_output_factor: float = 0.1,
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
        self._projection_layer = _projection_layer(
            input_size,
            math.prod(self._output_shape),
            logits_init_output_factor,
            None,
            kernel_initializer=kernel_initializer,
        )
        self._projection_op = LinearOp(self._projection_layer)

    def forward(self, inputs, state=()):
        """``([B, N] features, state) -> (distribution with batch shape [B], state)``."""
        logits = self._projection_op(inputs)
        if self._event_ndims:
            logits = logits.reshape(inputs.shape[:-1] + self._output_shape)
        if isinstance(self._minimum, int) and self._minimum == 0:
            dist = dist_utils.Categorical(logits=logits)
        else:
            dist = dist_utils.ShiftedCategorical(logits=logits, minimum=self._minimum)
        if self._event_ndims:
            dist = td.Independent(dist, self._event_ndims, validate_args=False)
        return dist, state


@alf.configurable
class NormalProjectionNetwork(Network):
    """Linear layers producing a diagonal Gaussian (optionally tanh-squashed) action distribution.

    ``mean = activation(W_m x + b_m)``, squashed into the action bounds by
    ``(max + min) / 2 + (max - min) / 2 * tanh(mean)`` when ``squash_mean``;
    ``std = std_transform(W_s x + b_s)`` when ``state_dependent_std``, else
    ``std_transform(p)`` for a learned per-dim parameter ``p`` (initially
    ``std_bias_initializer_value``). With ``scale_distribution`` the Gaussian
    itself is pushed through ``dist_squashing_transform`` (tanh) and an affine map
    onto the bounds, so every sample lies inside them (Haarnoja et al. 2018,
    appendix C); ``squash_mean`` is then ignored, since the mean lives in the
    pre-squash space.

    Args:
        input_size: size ``N`` of the ``[B, N]`` input.
        action_spec: a continuous ``TensorSpec`` (bounded for ``squash_mean`` or
            ``scale_distribution``).
        activation: applied to the mean (and state-dependent std) layer outputs.
        projection_output_init_gain: gain of the initial mean / std weights.
        kernel_initializer: initializes the mean / std weights in place instead
            (e.g. ``alf.initializers.torch_default_init`` to match another
            framework's init); None: variance scaling with
            ``projection_output_init_gain``.
        std_bias_initializer_value: initial std bias (or parameter) before ``std_transform``.
        squash_mean: squash the mean into the action bounds with tanh.
        state_dependent_std: compute the std from the input instead of a parameter.
        std_transform: maps the raw std to a positive one (``softplus``; ``torch.exp``
            or ``math_ops.clipped_exp`` work too); identity if None.
        scale_distribution: squash the whole distribution into the bounds.
        dist_squashing_transform: a ``td.Transform`` onto ``(-1, 1)``;
            ``dist_utils.StableTanh()`` if None.
        name: name of the network.
    """

    def __init__(
        self,
        input_size,
        action_spec,
        activation: Callable = math_ops.identity,
        projection_output_init_gain: float = 0.3,
        kernel_initializer: Callable | None = None,
        std_bias_initializer_value: float = 0.0,
        squash_mean: bool = True,
        state_dependent_std: bool = False,
        std_transform: Callable = nn.functional.softplus,
        scale_distribution: bool = False,
        dist_squashing_transform=None,
        name: str = "NormalProjectionNetwork",
    ):
        super().__init__(TensorSpec((input_size,)), name=name)
        if not action_spec.is_continuous:
            raise ValueError(f"{name} needs a continuous action spec, got {action_spec}")
        self._action_spec = action_spec
        self._action_shape = tuple(action_spec.shape)
        self._event_ndims = action_spec.ndim
        num_actions = math.prod(self._action_shape)
        self._activation = None if activation is math_ops.identity else activation
        self._std_transform = std_transform or math_ops.identity
        self._scale_distribution = scale_distribution
        self._squash_mean = squash_mean and not scale_distribution
        if squash_mean or scale_distribution:
            self._register_bounds(action_spec)
        self._squashing_transform = dist_squashing_transform or dist_utils.StableTanh()
        self._means_projection_layer = _projection_layer(
            input_size,
            num_actions,
            projection_output_init_gain,
            activation,
            kernel_initializer=kernel_initializer,
        )
        if state_dependent_std:
            self._std_projection_layer = _projection_layer(
                input_size,
                num_actions,
                projection_output_init_gain,
                activation,
                std_bias_initializer_value,
                kernel_initializer,
            )
        else:
            self._std_projection_layer = None
            self._std = nn.Parameter(torch.full(self._action_shape, std_bias_initializer_value))
        self._means_projection_op = LinearOp(self._means_projection_layer)
        self._std_projection_op = None
        if self._std_projection_layer is not None:
            self._std_projection_op = LinearOp(self._std_projection_layer)

    def _register_bounds(self, action_spec):
        if not isinstance(action_spec, BoundedTensorSpec):
            raise ValueError(
                f"{self._name}: squash_mean / scale_distribution need a bounded action spec"
            )
        low = np.broadcast_to(action_spec.minimum, self._action_shape).astype(np.float64)
        high = np.broadcast_to(action_spec.maximum, self._action_shape).astype(np.float64)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError(
                f"{self._name}: squash_mean / scale_distribution need finite action bounds, "
                f"got {action_spec}; set squash_mean=False and scale_distribution=False"
            )
        self.register_buffer(
            "_action_means", torch.as_tensor((high + low) / 2, dtype=torch.float32), False
        )
        self.register_buffer(
            "_action_magnitudes", torch.as_tensor((high - low) / 2, dtype=torch.float32), False
        )

    def _project(self, linear_op, inputs):
        x = linear_op(inputs)
        if self._activation is not None:
            x = self._activation(x)
        if self._event_ndims != 1:
            x = x.reshape(inputs.shape[:-1] + self._action_shape)
        return x

    def forward(self, inputs, state=()):
        """``([B, N] features, state) -> (distribution with batch shape [B], state)``."""
        means = self._project(self._means_projection_op, inputs)
        if self._squash_mean:
            means = torch.addcmul(self._action_means, self._action_magnitudes, means.tanh())
        if self._std_projection_op is None:
            stds = self._std_transform(self._std)
        else:
            stds = self._std_transform(self._project(self._std_projection_op, inputs))
        return self._normal_dist(means, stds), state

    def _normal_dist(self, means, stds):
        if self._event_ndims:
            dist = dist_utils.DiagMultivariateNormal(means, stds, self._event_ndims)
        else:
            dist = dist_utils.normal(means, stds)
        if not self._scale_distribution:
            return dist
        transforms = [
            self._squashing_transform,
            dist_utils.affine_transform(self._action_means, self._action_magnitudes),
        ]
        return dist_utils.elementwise_transformed(dist, transforms)
