r"""``QNetwork``: observation → one action value per discrete action, ``[B, num_actions]``.

The network of DQN (Mnih et al. 2015, "Human-level control through deep
reinforcement learning"): one forward pass gives :math:`Q(s, a)` for every
action ``a`` of a scalar ``Discrete`` action spec, so the greedy action and the
max over actions of a bootstrap target both cost a single pass. Column ``i``
holds the value of action ``action_spec.minimum + i`` (the minimum may be
nonzero); ``action_index`` and ``index_action`` convert between the two.

Options (each off by default; they combine):

- ``num_quantiles=N``: ``N`` quantiles :math:`\theta_1(s, a) .. \theta_N(s, a)` per action,
  ``[B, num_actions, N]`` (QR-DQN, Dabney et al. 2018; their mean is :math:`Q(s, a)`).
- ``dueling``: a value stream :math:`V(s)` and an advantage stream :math:`A(s, a)` on the
  shared layers, combined as :math:`Q(s, a) = V(s) + A(s, a) - \frac{1}{|A|}\sum_{a'} A(s, a')`
  (Wang et al. 2016, "Dueling Network Architectures for Deep Reinforcement Learning",
  eq. 9; with quantiles, quantile by quantile). ``dueling_fc_layer_params`` are hidden
  layers of each stream (the paper's Atari network: convolutions shared,
  ``fc_layer_params=()``, ``dueling_fc_layer_params=(512,)``); without them each stream is
  one linear layer on the shared features.
- ``noisy``: every fully connected layer (hidden, streams and output; not the convolutions)
  is an ``alf.layers.NoisyFC`` (Fortunato et al. 2018, "Noisy Networks for Exploration"):
  exploration comes from the learned weight noise, so DQN runs it with
  ``rollout_epsilon_greedy=0``; ``DqnAlgorithm`` draws the noise, and in eval mode the
  network is its mean (see ``NoisyFC``).

Without ``dueling`` and ``noisy`` the network is an ``EncodingNetwork`` with a last layer
of ``num_actions`` (times ``N``) units, as before; with either, the ``EncodingNetwork``
part ends with the shared layers and a head (``_head``) follows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import nn

import alf
from alf.configuration.argtypes import Count, PositiveFloat
from alf.layers import FC, NoisyFC
from alf.networks.encoding_networks import EncodingNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils.math_ops import identity


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


class _QHead(nn.Module):
    """The layers after the shared ones when ``dueling`` or ``noisy``: ``[B, D]`` features →
    ``[B, |A|]`` values (``[B, |A|, N]`` with quantiles).

    ``_hidden`` (the noisy network's hidden layers), then ``_output``: the Q layer, or with
    ``dueling`` the advantage stream, beside ``_value``, the value stream (module doc).

    Args:
        input_size: ``D``.
        num_actions: ``|A|``.
        num_quantiles: ``N`` (None: one value per action).
        hidden: sizes of the hidden layers before the head.
        stream_hidden: sizes of each dueling stream's hidden layers.
        dueling: two streams instead of one output layer.
        layer: ``layer(in, out, activation, last)`` → a layer.
        activation: activation of the hidden layers.
    """

    def __init__(
        self, input_size, num_actions, num_quantiles, hidden, stream_hidden, dueling, layer,
        activation,
    ):  # fmt: skip
        super().__init__()
        self._shape = (num_actions, num_quantiles or 1)
        self._squeeze = num_quantiles is None
        self._hidden, size = self._mlp(input_size, hidden, layer, activation)
        self._output, out_size = self._mlp(size, stream_hidden, layer, activation)
        self._output.append(layer(out_size, self._shape[0] * self._shape[1], identity, True))
        self._value = None
        if dueling:
            self._value, out_size = self._mlp(size, stream_hidden, layer, activation)
            self._value.append(layer(out_size, self._shape[1], identity, True))

    @staticmethod
    def _mlp(size, sizes, layer, activation):
        layers = nn.ModuleList()
        for out in sizes:
            layers.append(layer(size, out, activation, False))
            size = out
        return layers, size

    def forward(self, z):
        for layer in self._hidden:
            z = layer(z)
        q = z
        for layer in self._output:
            q = layer(q)
        q = q.unflatten(-1, self._shape)  # [B, |A|, N]
        if self._value is not None:
            v = z
            for layer in self._value:
                v = layer(v)
            q = v.unsqueeze(-2) + (q - q.mean(-2, keepdim=True))
        return q.squeeze(-1) if self._squeeze else q


@alf.configurable
class QNetwork(EncodingNetwork):
    """An ``EncodingNetwork`` whose last linear layer has one output per action (or a head:
    see the module doc).

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
        last_kernel_initializer: initializer of the output layers' weights (uniform in
            ±0.03 when None, so initial values are close to 0 whatever the
            observation scale; ``noisy``: ``NoisyFC``'s when None).
        use_fc_bn: batch normalization in the hidden FC layers.
        use_fc_ln: layer normalization in the hidden FC layers.
        num_quantiles: ``N`` quantiles per action, output ``[B, num_actions, N]``
            (None: ``[B, num_actions]``).
        dueling: value and advantage streams (module doc).
        dueling_fc_layer_params: hidden layer sizes of each dueling stream.
        noisy: ``NoisyFC`` fully connected layers (module doc); no ``use_fc_bn``/``use_fc_ln``.
        noisy_std_init: ``NoisyFC``'s ``std_init`` (:math:`\\sigma_0`).
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
        num_quantiles: Count | None = None,
        dueling: bool = False,
        dueling_fc_layer_params: tuple[int, ...] = (),
        noisy: bool = False,
        noisy_std_init: PositiveFloat = 0.5,
        name: str = "QNetwork",
    ):
        num_actions = _check_action_spec(action_spec, name)
        if noisy and (use_fc_bn or use_fc_ln):
            raise ValueError(f"{name}: noisy layers have no use_fc_bn / use_fc_ln")
        if dueling_fc_layer_params and not dueling:
            raise ValueError(f"{name}: dueling_fc_layer_params needs dueling=True")
        value_shape = (num_actions, num_quantiles or 1)
        head = dueling or noisy
        if last_kernel_initializer is None and not noisy:
            last_kernel_initializer = functools.partial(torch.nn.init.uniform_, a=-0.03, b=0.03)
        output_spec = None if num_quantiles is None or head else TensorSpec(value_shape)
        super().__init__(
            input_tensor_spec,
            output_tensor_spec=output_spec,
            input_preprocessors=input_preprocessors,
            input_preprocessors_ctor=input_preprocessors_ctor,
            preprocessing_combiner=preprocessing_combiner,
            conv_layer_params=conv_layer_params,
            fc_layer_params=None if noisy else fc_layer_params,
            activation=activation,
            kernel_initializer=kernel_initializer,
            last_layer_size=None if head else value_shape[0] * value_shape[1],
            last_activation=None,
            last_kernel_initializer=last_kernel_initializer,
            last_use_bias=True,
            use_fc_bn=use_fc_bn,
            use_fc_ln=use_fc_ln,
            name=name,
        )
        self._head = None
        if head:

            def layer(size, out, act, last):
                init = last_kernel_initializer if last else kernel_initializer
                if noisy:
                    return NoisyFC(size, out, act, noisy_std_init, init)
                norm = dict(use_bn=use_fc_bn, use_ln=use_fc_ln) if not last else {}
                return FC(size, out, act, kernel_initializer=init, **norm)

            self._head = _QHead(
                self.output_size,
                num_actions,
                num_quantiles,
                (fc_layer_params or ()) if noisy else (),
                dueling_fc_layer_params,
                dueling,
                layer,
                activation or identity,
            )
        self._action_spec = action_spec
        self._num_actions = num_actions
        self._num_quantiles = num_quantiles
        self._action_minimum = int(action_spec.minimum)

    @property
    def action_spec(self) -> BoundedTensorSpec:
        return self._action_spec

    @property
    def num_actions(self) -> int:
        return self._num_actions

    @property
    def num_quantiles(self) -> int | None:
        """``N`` of a quantile network, None otherwise."""
        return self._num_quantiles

    def action_index(self, action: torch.Tensor) -> torch.Tensor:
        """Column of ``action`` ``[B]`` in the Q values (``action - minimum``), int64."""
        return action.to(torch.int64) - self._action_minimum

    def index_action(self, index: torch.Tensor) -> torch.Tensor:
        """The action ``[B]`` (dtype of the spec) of column ``index`` ``[B]``."""
        return (index + self._action_minimum).to(self._action_spec.dtype)

    def forward(self, observation, state=()):
        """``([B, ...] observation nest, state) -> ([B, num_actions] Q values, state)``
        (``[B, num_actions, N]`` with ``num_quantiles``)."""
        z, state = super().forward(observation, state)
        if self._head is not None:
            z = self._head(z)
        return z, state

    @property
    def output_spec(self) -> TensorSpec:
        if self._num_quantiles is None:
            return TensorSpec((self._num_actions,), torch.float32)
        return TensorSpec((self._num_actions, self._num_quantiles), torch.float32)

    def make_parallel(self, n: int):
        if self._head is not None:
            raise ValueError(f"{self._name}: a dueling or noisy QNetwork has no parallel form")
        return super().make_parallel(n)
