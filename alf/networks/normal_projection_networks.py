"""Location-scale projection networks: a ``[B, N]`` feature to a Gaussian or Cauchy action
distribution, optionally squashed into the action bounds.

- ``NormalProjectionNetwork``: ``mean`` and ``std`` from linear layers (the std may be a
  learned parameter instead);
- ``StableNormalProjectionNetwork``: the std through a bounded inverse, ``std = min_std +
  1 / (1 / (max_std - min_std) + T(b))``, and the mean as a multiple of it, ``mean = a
  * std``: the second derivatives in ``a`` and ``b`` stay bounded as the std shrinks;
- ``CauchyProjectionNetwork``: the median and half-width of a Cauchy, with the same heads.

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


@alf.configurable
class NormalProjectionNetwork(Network):
    """Linear layers producing a diagonal Gaussian (optionally tanh-squashed) action distribution.

    ``mean = activation(W_m x + b_m)``, squashed into the action bounds by
    ``(max + min) / 2 + (max - min) / 2 * tanh(mean)`` when ``squash_mean`` (or
    passed through ``mean_transform`` instead, when given);
    ``std = std_transform(activation(W_s x + b_s))`` when ``state_dependent_std``, else
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
        parallelism: ``n`` independent replicas of the heads (a 1-D action spec): the
            distribution's batch shape is ``[B, n]``, its event shape the action's (e.g.
            the components of a mixture).
        activation: applied to the mean (and state-dependent std) layer outputs.
        projection_output_init_gain: gain of the initial mean / std weights.
        kernel_initializer: initializes the mean / std weights in place instead
            (e.g. ``alf.initializers.torch_default_init`` to match another
            framework's init); None: variance scaling with
            ``projection_output_init_gain``.
        std_bias_initializer_value: initial std bias (or parameter) before ``std_transform``.
        squash_mean: squash the mean into the action bounds with tanh.
        mean_transform: applied to the mean in place of the squashing of ``squash_mean``.
        state_dependent_std: compute the std from the input instead of a parameter.
        std_transform: maps the raw std to a positive one (``softplus``; ``torch.exp``
            or ``math_ops.clipped_exp`` work too); identity if None.
        scale_distribution: squash the whole distribution into the bounds.
        dist_squashing_transform: a ``td.Transform`` onto ``(-1, 1)``;
            ``dist_utils.StableTanh()`` if None (``dist_utils.Softsign()`` also fits).
        name: name of the network.
    """

    def __init__(
        self,
        input_size,
        action_spec,
        parallelism: int | None = None,
        activation: Callable = math_ops.identity,
        projection_output_init_gain: float = 0.3,
        kernel_initializer: Callable | None = None,
        std_bias_initializer_value: float = 0.0,
        squash_mean: bool = True,
        mean_transform: Callable | None = None,
        state_dependent_std: bool = False,
        std_transform: Callable = nn.functional.softplus,
        scale_distribution: bool = False,
        dist_squashing_transform=None,
        name: str = "NormalProjectionNetwork",
    ):
        super().__init__(TensorSpec((input_size,)), name=name)
        if not action_spec.is_continuous:
            raise ValueError(f"{name} needs a continuous action spec, got {action_spec}")
        check_parallelism(name, parallelism, action_spec)
        self._action_spec = action_spec
        self._parallelism = parallelism
        self._action_shape = tuple(action_spec.shape)
        self._event_ndims = action_spec.ndim
        num_actions = math.prod(self._action_shape)
        self._std_transform = std_transform or math_ops.identity
        self._scale_distribution = scale_distribution
        self._squash_mean = squash_mean and not scale_distribution and mean_transform is None
        self._mean_transform = mean_transform
        if self._squash_mean or scale_distribution:
            why = "scale_distribution" if scale_distribution else "squash_mean"
            low, high = action_bounds(name, action_spec, why)
            self.register_buffer("_action_means", (high + low) / 2, False)
            self.register_buffer("_action_magnitudes", (high - low) / 2, False)
        self._squashing_transform = dist_squashing_transform or dist_utils.StableTanh()
        head_args = dict(
            gain=projection_output_init_gain,
            activation=activation,
            kernel_initializer=kernel_initializer,
            parallelism=parallelism,
        )
        self._means_head = output_head(input_size, num_actions, **head_args)
        self._means_projection_layer = self._means_head.layer
        if state_dependent_std:
            self._std_head = output_head(
                input_size, num_actions, bias_value=std_bias_initializer_value, **head_args
            )
            self._std_projection_layer = self._std_head.layer
        else:
            self._std_head = self._std_projection_layer = None
            shape = self._action_shape if parallelism is None else (parallelism, num_actions)
            self._std = nn.Parameter(torch.full(shape, float(std_bias_initializer_value)))

    @property
    def parallelism(self) -> int | None:
        return self._parallelism

    def make_parallel(self, n: int) -> NormalProjectionNetwork:
        """A network of this type and arguments with ``n`` replicas (``parallelism=n``)."""
        if self._parallelism is not None:
            raise ValueError(f"{self._name}: make_parallel of a network already parallel")
        args = dict(self.saved_args, parallelism=n, name="parallel_" + self._name)
        return type(self)(**args)

    def _project(self, head, inputs):
        x = head(inputs)
        if self._event_ndims != 1:
            x = x.reshape(inputs.shape[:-1] + self._action_shape)
        return x

    def _raw_std(self, inputs):
        """The std before ``std_transform``: the std head's output or the parameter."""
        if self._std_head is None:
            return self._std
        return self._project(self._std_head, inputs)

    def _transform_mean(self, means):
        if self._mean_transform is not None:
            return self._mean_transform(means)
        if self._squash_mean:
            return torch.addcmul(self._action_means, self._action_magnitudes, means.tanh())
        return means

    def forward(self, inputs, state=()):
        """``([B, N] features, state) -> (distribution with batch shape [B], state)``."""
        means = self._transform_mean(self._project(self._means_head, inputs))
        stds = self._std_transform(self._raw_std(inputs))
        return self._normal_dist(means, stds), state

    def _normal_dist(self, means, stds):
        if self._event_ndims:
            dist = dist_utils.DiagMultivariateNormal(means, stds, self._event_ndims)
        else:
            dist = dist_utils.normal(means, stds)
        return self._squashed(dist)

    def _squashed(self, dist):
        if not self._scale_distribution:
            return dist
        transforms = [
            self._squashing_transform,
            dist_utils.affine_transform(self._action_means, self._action_magnitudes),
        ]
        return dist_utils.elementwise_transformed(dist, transforms)


def _stable_std_bias(init_std, min_std, max_std, inverse_std_transform, name) -> float:
    """The raw value ``b`` with ``min_std + 1 / (1 / (max_std - min_std) + T(b)) == init_std``."""
    if not init_std > min_std:
        raise ValueError(f"{name}: init_std must exceed min_std, got {init_std} <= {min_std}")
    if max_std is not None and not init_std < max_std:
        raise ValueError(f"{name}: init_std must be below max_std, got {init_std} >= {max_std}")
    c = 1.0 / (init_std - min_std)
    if max_std is not None:
        c -= 1.0 / (max_std - min_std)
    if inverse_std_transform == "exp":
        return math.log(c)
    if inverse_std_transform == "softplus":
        return math.log(math.expm1(c))
    raise ValueError(
        f"{name}: inverse_std_transform must be 'exp' or 'softplus', got {inverse_std_transform!r}"
    )


@alf.configurable
class StableNormalProjectionNetwork(NormalProjectionNetwork):
    """A diagonal Gaussian parameterized for stable optimization as the std gets small.

    With ``a`` the mean head's and ``b`` the std head's (or the learned parameter's)
    outputs and ``T`` the ``inverse_std_transform`` (``exp`` or ``softplus``)::

        std = min_std + 1 / (T(b) + 1 / (max_std - min_std))   (no 1 / (...) term
                                                                 without max_std)
        mean = squash(a * std)                                  (squash: as in
                                                                 NormalProjectionNetwork)

    so ``min_std < std < max_std``, and the derivatives of the log-density in ``a`` and
    ``b`` do not blow up as ``std -> 0`` (as they do for ``mean = a``, ``std = T(b)``).
    ``b`` starts at the value that gives ``init_std``; the weights start tiny
    (``projection_output_init_gain``), so the initial std is ``init_std`` everywhere.

    Args:
        input_size: size ``N`` of the ``[B, N]`` input.
        action_spec: a continuous ``TensorSpec``.
        parallelism: ``n`` replicas, as in ``NormalProjectionNetwork``.
        activation: applied to the head outputs ``a`` and ``b``.
        projection_output_init_gain: gain of the initial head weights.
        squash_mean: squash the mean into the action bounds with tanh.
        state_dependent_std: ``b`` from the input; else a learned per-dim parameter.
        inverse_std_transform: ``'exp'`` or ``'softplus'`` (``T`` above).
        scale_distribution: squash the whole distribution into the bounds.
        init_std: the initial std (``min_std < init_std < max_std``).
        min_std: the std's lower bound.
        max_std: the std's upper bound; None: none.
        dist_squashing_transform: as in ``NormalProjectionNetwork``.
        name: name of the network.
    """

    def __init__(
        self,
        input_size,
        action_spec,
        parallelism: int | None = None,
        activation: Callable = math_ops.identity,
        projection_output_init_gain: float = 1e-5,
        squash_mean: bool = True,
        state_dependent_std: bool = False,
        inverse_std_transform: str = "softplus",
        scale_distribution: bool = False,
        init_std: float = 1.0,
        min_std: float = 0.0,
        max_std: float | None = None,
        dist_squashing_transform=None,
        name: str = "StableNormalProjectionNetwork",
    ):
        bias = _stable_std_bias(init_std, min_std, max_std, inverse_std_transform, name)
        transform = torch.exp if inverse_std_transform == "exp" else nn.functional.softplus
        super().__init__(
            input_size,
            action_spec,
            parallelism=parallelism,
            activation=activation,
            projection_output_init_gain=projection_output_init_gain,
            std_bias_initializer_value=bias,
            squash_mean=squash_mean,
            state_dependent_std=state_dependent_std,
            std_transform=transform,
            scale_distribution=scale_distribution,
            dist_squashing_transform=dist_squashing_transform,
            name=name,
        )
        self._min_std = float(min_std)
        self._inv_std_offset = 0.0 if max_std is None else 1.0 / (max_std - min_std)

    def forward(self, inputs, state=()):
        inv_stds = self._std_transform(self._raw_std(inputs))
        if self._inv_std_offset:
            inv_stds = inv_stds + self._inv_std_offset
        stds = inv_stds.reciprocal()
        if self._min_std:
            stds = stds + self._min_std
        means = self._transform_mean(self._project(self._means_head, inputs) * stds)
        return self._normal_dist(means, stds), state


@alf.configurable
class CauchyProjectionNetwork(NormalProjectionNetwork):
    """Linear layers producing independent Cauchy distributions (``DiagMultivariateCauchy``).

    The heads are ``NormalProjectionNetwork``'s: the median where it has the mean (squashed
    into the bounds by ``squash_median``), the half-width (``scale``) where it has the std.
    Samples leave out the extreme quantiles (``dist_utils.StableCauchy``).

    Args:
        input_size: size ``N`` of the ``[B, N]`` input.
        action_spec: a continuous ``TensorSpec``.
        squash_median: squash the median into the action bounds with tanh.
        scale_bias_initializer_value: initial scale bias (or parameter) before
            ``scale_transform``.
        state_dependent_scale: compute the scale from the input instead of a parameter.
        scale_transform: maps the raw scale to a positive one.
        scale_distribution: squash the whole distribution into the bounds.
        dist_squashing_transform: as in ``NormalProjectionNetwork``.
        name: name of the network.
    """

    def __init__(
        self,
        input_size,
        action_spec,
        squash_median: bool = True,
        scale_bias_initializer_value: float = 0.0,
        state_dependent_scale: bool = False,
        scale_transform: Callable = nn.functional.softplus,
        scale_distribution: bool = False,
        dist_squashing_transform=None,
        name: str = "CauchyProjectionNetwork",
    ):
        super().__init__(
            input_size,
            action_spec,
            squash_mean=squash_median,
            std_bias_initializer_value=scale_bias_initializer_value,
            state_dependent_std=state_dependent_scale,
            std_transform=scale_transform,
            scale_distribution=scale_distribution,
            dist_squashing_transform=dist_squashing_transform,
            name=name,
        )

    def make_parallel(self, n: int):
        raise ValueError(f"{self._name}: CauchyProjectionNetwork has no parallel form")

    def forward(self, inputs, state=()):
        median = self._transform_mean(self._project(self._means_head, inputs))
        scale = self._std_transform(self._raw_std(inputs))
        if scale.shape != median.shape:
            scale = scale.expand(median.shape)
        if self._event_ndims:
            dist = dist_utils.DiagMultivariateCauchy(median, scale, self._event_ndims)
        else:
            dist = dist_utils.StableCauchy(median, scale, validate_args=False)
        return self._squashed(dist), state
