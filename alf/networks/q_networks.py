"""``QNetwork``: observation → one action value per discrete action, ``[B, num_actions]``.

The network of DQN (Mnih et al. 2015, "Human-level control through deep
reinforcement learning"): one forward pass gives :math:`Q(s, a)` for every
action ``a`` of a scalar ``Discrete`` action spec, so the greedy action and the
max over actions of a bootstrap target both cost a single pass. Column ``i``
holds the value of action ``action_spec.minimum + i`` (the minimum may be
nonzero); ``action_index`` and ``index_action`` convert between the two.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

import alf
from alf.networks.encoding_networks import EncodingNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec


def _check_action_spec(action_spec, name: str) -> int:
    """The number of actions of a scalar discrete bounded spec (a ``ValueError`` otherwise)."""
    if (
        not isinstance(action_spec, BoundedTensorSpec)
        or not action_spec.is_discrete
        or action_spec.shape != ()
    ):
        raise ValueError(
            f"{name} needs a scalar discrete BoundedTensorSpec action spec, got {action_spec}"
        )
    return action_spec.num_values


@alf.configurable
class QNetwork(EncodingNetwork):
    """An ``EncodingNetwork`` whose last linear layer has one output per action.

    Args:
        input_tensor_spec: nest of ``TensorSpec`` of the observation.
        action_spec: a scalar discrete ``BoundedTensorSpec``; its
            ``maximum - minimum + 1`` values are the actions.
        input_preprocessors: see ``EncodingNetwork``.
        input_preprocessors_ctor: see ``EncodingNetwork``.
        preprocessing_combiner: see ``EncodingNetwork``.
        conv_layer_params: see ``EncodingNetwork``.
        fc_layer_params: hidden layer sizes.
        activation: activation of the hidden layers.
        kernel_initializer: initializer of the hidden layers' weights.
        last_kernel_initializer: initializer of the Q layer's weights (uniform in
            ±0.03 when None, so initial values are close to 0 whatever the
            observation scale).
        use_fc_bn: batch normalization in the hidden FC layers.
        use_fc_ln: layer normalization in the hidden FC layers.
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec,
        action_spec,
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
        name: str = "QNetwork",
    ):
        num_actions = _check_action_spec(action_spec, name)
        if last_kernel_initializer is None:
            last_kernel_initializer = functools.partial(torch.nn.init.uniform_, a=-0.03, b=0.03)
        super().__init__(
            input_tensor_spec,
            input_preprocessors=input_preprocessors,
            input_preprocessors_ctor=input_preprocessors_ctor,
            preprocessing_combiner=preprocessing_combiner,
            conv_layer_params=conv_layer_params,
            fc_layer_params=fc_layer_params,
            activation=activation,
            kernel_initializer=kernel_initializer,
            last_layer_size=num_actions,
            last_activation=None,
            last_kernel_initializer=last_kernel_initializer,
            last_use_bias=True,
            use_fc_bn=use_fc_bn,
            use_fc_ln=use_fc_ln,
            name=name,
        )
        self._action_spec = action_spec
        self._num_actions = num_actions
        self._action_minimum = int(action_spec.minimum)

    @property
    def action_spec(self) -> BoundedTensorSpec:
        return self._action_spec

    @property
    def num_actions(self) -> int:
        return self._num_actions

    def action_index(self, action: torch.Tensor) -> torch.Tensor:
        """Column of ``action`` ``[B]`` in the Q values (``action - minimum``), int64."""
        return action.to(torch.int64) - self._action_minimum

    def index_action(self, index: torch.Tensor) -> torch.Tensor:
        """The action ``[B]`` (dtype of the spec) of column ``index`` ``[B]``."""
        return (index + self._action_minimum).to(self._action_spec.dtype)

    def forward(self, observation, state=()):
        """``([B, ...] observation nest, state) -> ([B, num_actions] Q values, state)``."""
        return super().forward(observation, state)

    @property
    def output_spec(self) -> TensorSpec:
        return TensorSpec((self._num_actions,), torch.float32)
