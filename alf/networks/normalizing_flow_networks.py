"""Normalizing flows as networks: ``RealNVPNetwork`` (Dinh et al. 2017, "Density estimation
using Real NVP"), with ALF's arguments.

A flow network ``f`` is invertible with an easy log-Jacobian; ``make_invertible_transform(z)``
expresses it, conditioned on inputs ``z`` (or not), as a torch ``Transform`` that a
``TransformedDistribution`` can use (``LatentActorDistributionNetwork``). Each RealNVP layer
keeps the masked part ``b * x`` and maps the rest affinely, with scale and translation
computed from ``b * x`` (and ``z``) by two independent MLPs (one ``make_parallel(2)`` pass):

    y = b * x + (1 - b) * (x * scale(b * x; z) + t(b * x; z))
    x = b * y + (1 - b) * ((y - t(b * y; z)) / scale(b * y; z))
    log |det dy/dx| = sum over (1 - b) of log scale(b * x; z)

The mask flips from one layer to the next, so every element is transformed.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable

import torch
import torch.distributions as td
from torch import nn
from torch.distributions import constraints

import alf
import alf.layers as layers
import alf.nest as nest
from alf.networks.containers import Sequential
from alf.networks.network import Network
from alf.tensor_specs import TensorSpec
from alf.utils.math_ops import clipped_exp

logger = logging.getLogger(__name__)

#: RealNVP's default positive scale: ``exp`` clipped to ``[e^-10, e^2]``, as ALF's
_CLIPPED_EXP = functools.partial(clipped_exp, clip_value_min=-10, clip_value_max=2)


class NormalizingFlowNetwork(Network):
    """The base of flow networks: ``make_invertible_transform(z)`` (cached for the same
    ``z`` object when ``use_transform_cache``), ``forward((x, z))`` and ``inverse((y, z))``
    (``x`` alone without conditional inputs).

    Args:
        input_tensor_spec: the spec of ``x`` (one vector).
        conditional_input_tensor_spec: the (nested) spec of ``z``; None: unconditional.
        use_transform_cache: reuse the transform made for the same ``z`` object.
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec: TensorSpec,
        conditional_input_tensor_spec=None,
        use_transform_cache: bool = True,
        name: str = "NormalizingFlowNetwork",
    ):
        if nest.is_nested(input_tensor_spec) or len(input_tensor_spec.shape) != 1:
            raise ValueError(f"{name}: the input must be one vector, got {input_tensor_spec}")
        self._conditional = conditional_input_tensor_spec is not None
        spec = (
            (input_tensor_spec, conditional_input_tensor_spec)
            if self._conditional
            else input_tensor_spec
        )
        super().__init__(spec, name=name)
        self._use_transform_cache = use_transform_cache
        self._cached = (None, None)

    @property
    def use_conditional_inputs(self) -> bool:
        return self._conditional

    def make_invertible_transform(self, conditional_inputs=None) -> td.Transform:
        if self._use_transform_cache and self._cached[1] is conditional_inputs and self._cached[0]:
            return self._cached[0]
        transform = self._make_invertible_transform(conditional_inputs)
        if self._use_transform_cache:
            self._cached = (transform, conditional_inputs)
        return transform

    def _make_invertible_transform(self, conditional_inputs=None) -> td.Transform:
        raise NotImplementedError

    def forward(self, inputs, state=()):
        x, z = inputs if self._conditional else (inputs, None)
        return self.make_invertible_transform(z)(x), state

    def inverse(self, inputs, state=()):
        y, z = inputs if self._conditional else (inputs, None)
        return self.make_invertible_transform(z).inv(y), state


@alf.configurable
class RealNVPNetwork(NormalizingFlowNetwork):
    """RealNVP layers (module doc) with ALF's arguments.

    Args:
        input_tensor_spec: the spec of ``x`` (one vector of size ``D``).
        conditional_input_tensor_spec: the (nested) spec of ``z``, concatenated to ``b * x``
            as the scale and translation networks' input; None: unconditional.
        input_preprocessors: not supported (an error names it).
        preprocessing_combiner: not supported (an error names it).
        conv_layer_params: not supported (an error names it).
        fc_layer_params: hidden layer sizes of the scale and translation networks.
        activation: their hidden activation (tanh: small initial scales).
        transform_scale_nonlinear: maps the scale network's output to a positive scale
            (``clipped_exp`` to ``[e^-10, e^2]`` by default).
        sub_dim: elements kept by the first layer's mask (``D // 2`` when None).
        mask_mode: ``'contiguous'`` (the first ``sub_dim``), ``'distributed'`` (every
            ``D // sub_dim``-th) or ``'random'`` (a new draw every two layers).
        num_layers: number of layers.
        use_transform_cache: see ``NormalizingFlowNetwork``.
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec: TensorSpec,
        conditional_input_tensor_spec=None,
        input_preprocessors=None,
        preprocessing_combiner=None,
        conv_layer_params=None,
        fc_layer_params: tuple[int, ...] | None = None,
        activation: Callable = torch.tanh,
        transform_scale_nonlinear: Callable = _CLIPPED_EXP,
        sub_dim: int | None = None,
        mask_mode: str = "contiguous",
        num_layers: int = 2,
        use_transform_cache: bool = True,
        name: str = "RealNVPNetwork",
    ):
        unsupported = dict(
            input_preprocessors=input_preprocessors,
            conv_layer_params=conv_layer_params,
            preprocessing_combiner=preprocessing_combiner,
        )
        given = sorted(k for k, v in unsupported.items() if v is not None)
        if given:
            raise ValueError(f"{name}: {', '.join(given)} not supported by alf's RealNVPNetwork")
        super().__init__(
            input_tensor_spec, conditional_input_tensor_spec, use_transform_cache, name
        )
        size = input_tensor_spec.shape[0]
        sub_dim = size // 2 if sub_dim is None else sub_dim
        if not 0 <= sub_dim <= size or num_layers < 1:
            raise ValueError(f"{name}: sub_dim {sub_dim} not in [0, {size}] or num_layers < 1")
        if sub_dim in (0, size):
            logger.warning(
                "%s: sub_dim %d leaves some layers' transforms affine in x", name, sub_dim
            )
        self._scale_nonlinear = transform_scale_nonlinear
        self._masks = _masks(size, sub_dim, mask_mode, num_layers)
        cond_size = 0
        if self._conditional:
            flat = nest.flatten(conditional_input_tensor_spec)
            cond_size = sum(math.prod(s.shape) for s in flat)
        sizes = (size + cond_size, *(fc_layer_params or ()))
        self._nets = nn.ModuleList()
        for _ in range(num_layers):
            hidden = [layers.FC(a, b, activation=activation) for a, b in zip(sizes[:-1], sizes[1:])]
            mlp = Sequential(*hidden, layers.FC(sizes[-1], size))
            self._nets.append(mlp.make_parallel(2))  # [B, 2, D]: scale and translation

    def _make_invertible_transform(self, conditional_inputs=None) -> td.Transform:
        z = None
        if conditional_inputs is not None:
            z = torch.cat(
                [x.reshape(x.shape[0], -1).float() for x in nest.flatten(conditional_inputs)], -1
            )
        return td.ComposeTransform(
            [
                _RealNVPTransform(net, mask, z, self._scale_nonlinear)
                for net, mask in zip(self._nets, self._masks)
            ]
        )


def _masks(size: int, sub_dim: int, mode: str, num_layers: int) -> list[torch.Tensor]:
    """The layers' boolean masks ``[D]`` (True: kept), alternating with their negation."""
    masks = []
    for i in range(num_layers):
        if i % 2:
            masks.append(~masks[-1])
            continue
        mask = torch.zeros(size, dtype=torch.bool)
        if mode == "contiguous":
            mask[:sub_dim] = True
        elif mode == "distributed":
            if sub_dim > 0:
                step = size // sub_dim
                mask[torch.arange(0, step * sub_dim, step)] = True
        elif mode == "random":
            mask[torch.randperm(size)[:sub_dim]] = True
        else:
            raise ValueError(
                f"RealNVPNetwork: mask_mode {mode!r} is not one of 'contiguous', "
                "'distributed', 'random'"
            )
        masks.append(mask)
    return masks


class _RealNVPTransform(td.Transform):
    """One RealNVP layer as a bijective transform of vectors (module doc)."""

    domain = constraints.independent(constraints.real, 1)
    codomain = constraints.independent(constraints.real, 1)
    bijective = True

    def __init__(self, net, mask, z, scale_nonlinear, cache_size: int = 1):
        super().__init__(cache_size=cache_size)
        self._net, self._z, self._scale_nonlinear = net, z, scale_nonlinear
        self._keep = mask.float()
        self._last = (None, None)  # (x, scale) of the last forward or inverse pass

    def _scale_and_shift(self, kept):
        """``scale, t`` ``[..., D]`` from the kept part (any leading batch dims)."""
        lead = kept.shape[:-1]
        flat = kept.reshape(-1, kept.shape[-1])
        if self._z is not None:
            z = self._z
            if z.shape[0] < flat.shape[0]:  # several samples per conditional input
                z = z.repeat(flat.shape[0] // z.shape[0], 1)
            flat = torch.cat([flat, z], -1)
        out, _ = self._net(flat)
        scale = self._scale_nonlinear(out[:, 0]).reshape(*lead, -1)
        return scale, out[:, 1].reshape(*lead, -1)

    def _call(self, x):
        kept = x * self._keep
        scale, shift = self._scale_and_shift(kept)
        self._last = (x, scale)
        return kept + (1 - self._keep) * (x * scale + shift)

    def _inverse(self, y):
        kept = y * self._keep
        scale, shift = self._scale_and_shift(kept)
        x = kept + (1 - self._keep) * ((y - shift) / scale)
        self._last = (x, scale)
        return x

    def log_abs_det_jacobian(self, x, y):
        # the scale of the pass that gave x or came from it (``log_prob`` after ``rsample``
        # or after ``inv``): the networks run once per pass, not twice
        last_x, scale = self._last
        if x is not last_x:
            scale, _ = self._scale_and_shift(x * self._keep)
        return ((1 - self._keep) * scale.log()).sum(-1)
