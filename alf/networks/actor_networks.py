"""``ActorNetwork``: observation → a deterministic action inside the action bounds.

The policy :math:`\\mu_\\phi(s)` of DDPG (Lillicrap et al. 2016, "Continuous
control with deep reinforcement learning") and TD3 (Fujimoto et al. 2018):
an ``EncodingNetwork`` whose last linear layer gives one pre-activation ``z``
per action dim, squashed into the bounds

.. math::  a = \\frac{high + low}{2} + \\frac{high - low}{2} \\tanh(z).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import torch

import alf
from alf.networks.encoding_networks import EncodingNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec


def action_bounds(action_spec, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` of a continuous ``BoundedTensorSpec`` with finite bounds, broadcast
    to its shape (a ``ValueError`` otherwise)."""
    if not isinstance(action_spec, BoundedTensorSpec) or not action_spec.is_continuous:
        raise ValueError(f"{name} needs a continuous BoundedTensorSpec, got {action_spec}")
    shape = tuple(action_spec.shape)
    low = np.broadcast_to(action_spec.minimum, shape).astype(np.float64)
    high = np.broadcast_to(action_spec.maximum, shape).astype(np.float64)
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise ValueError(f"{name} needs finite action bounds, got {action_spec}")
    return low, high


@alf.configurable
class ActorNetwork(EncodingNetwork):
    """Deterministic actor: ``[B, ...]`` observation → ``[B, *action_shape]`` action in bounds.

    Args:
        input_tensor_spec: nest of ``TensorSpec`` of the observation.
        action_spec: a continuous ``BoundedTensorSpec`` with finite bounds.
        input_preprocessors: see ``EncodingNetwork``.
        preprocessing_combiner: see ``EncodingNetwork``.
        conv_layer_params: see ``EncodingNetwork``.
        fc_layer_params: hidden layer sizes.
        activation: activation of the hidden layers.
        kernel_initializer: initializer of the hidden layers' weights.
        last_kernel_initializer: initializer of the action layer's weights;
            uniform in ±0.003 when None (Lillicrap et al. 2016, section 7), so the
            initial actions are close to the middle of the bounds.
        squashing_func: maps ``z`` into ``(-1, 1)`` before scaling to the bounds.
        use_fc_bn: batch normalization in the hidden FC layers.
        fc_bn_ctor: see ``EncodingNetwork`` (e.g. ``alf.layers.BatchRenorm1d``).
        fc_bn_after_activation: see ``EncodingNetwork`` (CrossQ's placement).
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec,
        action_spec,
        input_preprocessors=None,
        preprocessing_combiner=None,
        conv_layer_params: tuple[tuple, ...] | None = None,
        fc_layer_params: tuple[int, ...] | None = None,
        activation: Callable | None = torch.relu_,
        kernel_initializer: Callable | None = None,
        last_kernel_initializer: Callable | None = None,
        squashing_func: Callable | None = torch.tanh,
        use_fc_bn: bool = False,
        fc_bn_ctor: Callable | None = None,
        fc_bn_after_activation: bool = False,
        name: str = "ActorNetwork",
    ):
        low, high = action_bounds(action_spec, name)
        if last_kernel_initializer is None:
            last_kernel_initializer = functools.partial(torch.nn.init.uniform_, a=-0.003, b=0.003)
        super().__init__(
            input_tensor_spec,
            input_preprocessors=input_preprocessors,
            preprocessing_combiner=preprocessing_combiner,
            conv_layer_params=conv_layer_params,
            fc_layer_params=fc_layer_params,
            activation=activation,
            kernel_initializer=kernel_initializer,
            last_layer_size=math.prod(action_spec.shape),
            last_activation=None,
            last_kernel_initializer=last_kernel_initializer,
            last_use_bias=True,
            use_fc_bn=use_fc_bn,
            fc_bn_ctor=fc_bn_ctor,
            fc_bn_after_activation=fc_bn_after_activation,
            name=name,
        )
        self._action_spec = action_spec
        self._action_shape = tuple(action_spec.shape)
        self._squashing_func = squashing_func
        self.register_buffer(
            "_action_means", torch.as_tensor((high + low) / 2, dtype=torch.float32), False
        )
        self.register_buffer(
            "_action_magnitudes", torch.as_tensor((high - low) / 2, dtype=torch.float32), False
        )

    @property
    def action_spec(self) -> BoundedTensorSpec:
        return self._action_spec

    @property
    def action_means(self) -> torch.Tensor:
        """``(high + low) / 2``, shaped like one action."""
        return self._action_means

    @property
    def action_magnitudes(self) -> torch.Tensor:
        """``(high - low) / 2``, shaped like one action."""
        return self._action_magnitudes

    def forward(self, observation, state=()):
        """``([B, ...] observation nest, state) -> ([B, *action_shape] action, state)``."""
        z, state = super().forward(observation, state)
        if self._action_shape != (z.shape[-1],):
            z = z.reshape(z.shape[:-1] + self._action_shape)
        return self._action_means + self._action_magnitudes * self._squashing_func(z), state

    @property
    def output_spec(self) -> TensorSpec:
        return TensorSpec(self._action_shape, torch.float32)
