"""``ValueNetwork``: observation → value ``[B]`` (or ``[B, *output_shape]``)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

import alf
from alf.networks.encoding_networks import EncodingNetwork
from alf.tensor_specs import TensorSpec

_SCALAR_SPEC = TensorSpec(())


@alf.configurable
class ValueNetwork(EncodingNetwork):
    """An ``EncodingNetwork`` with a final linear layer of ``prod(output_tensor_spec.shape)``
    units, reshaped to ``[B, *output_tensor_spec.shape]`` (``[B]`` for a scalar value).

    The last layer's weights start small (uniform in ±0.03) so that initial
    values are close to 0 whatever the observation scale.

    Args:
        input_tensor_spec: nest of ``TensorSpec`` of the observation.
        output_tensor_spec: ``TensorSpec`` of one value (scalar by default).
        input_preprocessors: see ``EncodingNetwork``.
        input_preprocessors_ctor: see ``EncodingNetwork``.
        preprocessing_combiner: see ``EncodingNetwork``.
        conv_layer_params: see ``EncodingNetwork``.
        fc_layer_params: hidden layer sizes.
        activation: activation of the hidden layers.
        kernel_initializer: initializer of the hidden layers' weights.
        last_kernel_initializer: initializer of the value layer's weights.
        use_fc_bn: batch normalization in the hidden FC layers.
        use_fc_ln: layer normalization in the hidden FC layers.
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec,
        output_tensor_spec=_SCALAR_SPEC,
        input_preprocessors=None,
        input_preprocessors_ctor: Callable | None = None,
        preprocessing_combiner=None,
        conv_layer_params: tuple[tuple, ...] | None = None,
        fc_layer_params: tuple[int, ...] | None = None,
        activation: Callable | None = torch.relu_,
        kernel_initializer: Callable | None = None,
        last_kernel_initializer: Callable | None = None,
        use_fc_bn: bool = False,
        use_fc_ln: bool = False,
        name: str = "ValueNetwork",
    ):
        if last_kernel_initializer is None:
            last_kernel_initializer = functools.partial(torch.nn.init.uniform_, a=-0.03, b=0.03)
        super().__init__(
            input_tensor_spec,
            output_tensor_spec=TensorSpec(output_tensor_spec.shape),
            input_preprocessors=input_preprocessors,
            input_preprocessors_ctor=input_preprocessors_ctor,
            preprocessing_combiner=preprocessing_combiner,
            conv_layer_params=conv_layer_params,
            fc_layer_params=fc_layer_params,
            activation=activation,
            kernel_initializer=kernel_initializer,
            last_layer_size=math.prod(output_tensor_spec.shape),
            last_activation=None,
            last_kernel_initializer=last_kernel_initializer,
            last_use_bias=True,
            use_fc_bn=use_fc_bn,
            use_fc_ln=use_fc_ln,
            name=name,
        )
