r"""``CriticQuantileNetwork``: the implicit quantile critic :math:`Z_\tau(s, a)` of DSAC.

Dabney et al. 2018b, "Implicit Quantile Networks for Distributional Reinforcement
Learning" (IQN, arXiv:1806.06923), eq. (4), for a critic of (observation, action), with
ALF's arguments and layout (``alf.networks.CriticQuantileNetwork``):

1. the observation and action go through a ``CriticNetwork`` (the ``observation_*``,
   ``action_*`` and ``obs_act_joint_fc_layer_params`` arguments) whose last layer has
   ``H = obs_act_tau_joint_fc_layer_params[0]`` units, normalized (``use_fc_ln``) and
   activated (``obs_act_activation``): :math:`\psi(s, a)` ``[B, H]``;
2. every fraction :math:`\tau` of ``tau`` ``[B, N]`` is embedded as
   :math:`\cos(\pi j \tau)`, ``j = 1..tau_embedding_dim``, then through
   ``tau_fc_layer_params`` and a last layer of ``H`` units (normalized, activated by
   ``tau_activation``, a sigmoid): :math:`\phi(\tau)` ``[B, N, H]``;
3. their product :math:`\psi(s, a) \odot \phi(\tau)` goes through the layers
   ``obs_act_tau_joint_fc_layer_params`` (relu, normalized) and a linear last layer:
   :math:`Z_{\tau_k}(s, a)` ``[B, N]`` (``[B, N, *output_shape]`` for a vector output).

With ``num_replicas = R`` there are ``R`` independent critics, each layer of them one
batched product (as ``CriticNetwork``'s replicas), and the output
is ``[B, R, N]`` (ALF builds them with ``make_parallel(R)``, which this also offers).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

import alf
from alf.initializers import variance_scaling_init
from alf.networks.critic_networks import CriticNetwork
from alf.networks.network import Network
from alf.tensor_specs import TensorSpec
from alf.utils import math_ops


class CosineEmbedding(nn.Module):
    r""":math:`\tau` ``[..., N]`` → :math:`\cos(\pi j \tau)` ``[..., N, d]``, ``j = 1..d``
    (ALF's ``CosineEmbeddingPreprocessor``)."""

    def __init__(self, embedding_dim: int):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.register_buffer(
            "_frequencies", torch.arange(1, 1 + embedding_dim, dtype=torch.float32) * math.pi, False
        )

    def forward(self, tau):
        return torch.cos(tau.unsqueeze(-1) * self._frequencies)


class _ReplicatedFC(nn.Module):
    """``R`` fully connected layers as one batched product on ``[R, B, in]`` (or a shared
    ``[B, in]``) → ``[R, B, out]``: ``activation(norm(x W_r + b_r))``, the layer norm
    (``use_ln``) with each replica's own affine parameters; each ``W_r`` initialized by
    ``init(weight [out, in])`` as an ``FC``, the bias 0."""

    def __init__(self, n_in, n_out, num_replicas, activation, use_ln, init):
        super().__init__()
        weights = []
        for _ in range(num_replicas):
            weight = torch.empty(n_out, n_in)
            init(weight)
            weights.append(weight.t())
        self.weight = nn.Parameter(torch.stack(weights).contiguous())
        self.bias = nn.Parameter(torch.zeros(num_replicas, 1, n_out))
        self._use_ln = use_ln
        if use_ln:
            self.ln_weight = nn.Parameter(torch.ones(num_replicas, 1, n_out))
            self.ln_bias = nn.Parameter(torch.zeros(num_replicas, 1, n_out))
        self._activation = activation
        self._num_replicas = num_replicas

    def forward(self, x):
        if x.ndim == 2:
            x = x.expand(self._num_replicas, *x.shape)
        y = torch.baddbmm(self.bias, x, self.weight)
        if self._use_ln:
            y = torch.addcmul(self.ln_bias, F.layer_norm(y, y.shape[-1:]), self.ln_weight)
        return self._activation(y)


def _default_kernel_initializer():
    """ALF's: uniform with std ``sqrt(1/3) / sqrt(fan_in)``, i.e. ``U(±1/sqrt(fan_in))``."""
    return functools.partial(
        variance_scaling_init,
        gain=math.sqrt(1.0 / 3),
        mode="fan_in",
        distribution="uniform",
        nonlinearity=math_ops.identity,
    )


@alf.configurable
class CriticQuantileNetwork(Network):
    """:math:`Z_\\tau(s, a)`: ``(((observation, action) [B, ...]), tau [B, N])`` →
    ``[B, N]`` (one critic) or ``[B, R, N]`` (module docstring).

    Args:
        input_tensor_spec: ``(observation_spec, action_spec)``.
        tau_spec: ``TensorSpec((N,))`` of the fractions of one input.
        output_tensor_spec: spec of one quantile value (scalar by default).
        observation_input_processors, observation_input_processors_ctor,
        observation_preprocessing_combiner, observation_conv_layer_params,
        observation_fc_layer_params, action_input_processors,
        action_input_processors_ctor, action_preprocessing_combiner,
        action_fc_layer_params, observation_action_combiner: as ``CriticNetwork``'s.
        obs_act_joint_fc_layer_params: hidden layers after the observation and action
            are combined (before the layer of ``H`` units).
        obs_act_activation: activation of those layers and of the ``H`` units.
        tau_embedding_dim: number of cosine features of a fraction.
        tau_input_processors: a module ``tau [B, N]`` → ``[B, N, d]`` instead of the
            cosine embedding.
        tau_fc_layer_params: hidden layers of the fraction embedding (relu).
        tau_activation: activation of the embedding's ``H`` units.
        obs_act_tau_joint_fc_layer_params: the layers after the product; the first size
            is ``H``.
        use_fc_bn: batch normalization of the hidden layers (ALF's argument; not
            supported here: a ``ValueError``).
        use_fc_ln: layer normalization of the hidden layers and of both ``H``-unit layers.
        kernel_initializer: ``init(weight [out, in])`` of every layer but the last
            (ALF's ``U(±1/sqrt(fan_in))`` when None).
        last_kernel_initializer: of the fraction embedding's and the value's last
            layers (``U(±0.003)`` when None).
        use_naive_parallel_network: the observation–action ``CriticNetwork`` runs its
            replicas one by one (the other layers are always batched).
        num_replicas: ``R``.
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec,
        tau_spec,
        output_tensor_spec=TensorSpec(()),
        observation_input_processors=None,
        observation_input_processors_ctor: Callable | None = None,
        observation_preprocessing_combiner=None,
        observation_conv_layer_params: tuple[tuple, ...] | None = None,
        observation_fc_layer_params: tuple[int, ...] | None = None,
        action_input_processors=None,
        action_input_processors_ctor: Callable | None = None,
        action_preprocessing_combiner=None,
        action_fc_layer_params: tuple[int, ...] | None = None,
        observation_action_combiner: Callable | None = None,
        obs_act_joint_fc_layer_params: tuple[int, ...] | None = None,
        obs_act_activation: Callable = torch.relu_,
        tau_embedding_dim: int = 64,
        tau_input_processors=None,
        tau_fc_layer_params: tuple[int, ...] | None = None,
        tau_activation: Callable = torch.sigmoid_,
        obs_act_tau_joint_fc_layer_params: tuple[int, ...] = (256,),
        use_fc_bn: bool = False,
        use_fc_ln: bool = True,
        kernel_initializer: Callable | None = None,
        last_kernel_initializer: Callable | None = None,
        use_naive_parallel_network: bool = False,
        num_replicas: int = 1,
        name: str = "CriticQuantileNetwork",
    ):
        super().__init__((input_tensor_spec, tau_spec), name=name)
        if use_fc_bn:
            raise ValueError(f"{name}: use_fc_bn is not supported (use_fc_ln is)")
        if not obs_act_tau_joint_fc_layer_params:
            raise ValueError(f"{name}: obs_act_tau_joint_fc_layer_params must not be empty")
        if kernel_initializer is None:
            kernel_initializer = _default_kernel_initializer()
        if last_kernel_initializer is None:
            last_kernel_initializer = functools.partial(nn.init.uniform_, a=-0.003, b=0.003)
        self._num_replicas = num_replicas
        self._num_quantiles = tau_spec.shape[-1]
        self._value_shape = tuple(output_tensor_spec.shape)
        width = obs_act_tau_joint_fc_layer_params[0]
        self._obs_act_encoder = CriticNetwork(
            input_tensor_spec,
            observation_input_processors=observation_input_processors,
            observation_input_processors_ctor=observation_input_processors_ctor,
            observation_preprocessing_combiner=observation_preprocessing_combiner,
            observation_conv_layer_params=observation_conv_layer_params,
            observation_fc_layer_params=observation_fc_layer_params,
            action_input_processors=action_input_processors,
            action_input_processors_ctor=action_input_processors_ctor,
            action_preprocessing_combiner=action_preprocessing_combiner,
            action_fc_layer_params=action_fc_layer_params,
            observation_action_combiner=observation_action_combiner,
            joint_fc_layer_params=obs_act_joint_fc_layer_params,
            activation=obs_act_activation,
            kernel_initializer=kernel_initializer,
            use_fc_ln=use_fc_ln,
            last_use_fc_ln=use_fc_ln,
            last_layer_activation=obs_act_activation,
            output_tensor_spec=TensorSpec((width,)),
            use_naive_parallel=use_naive_parallel_network,
            num_replicas=num_replicas,
            name=name + ".ObsActEncoder",
        )
        if tau_input_processors is None:
            tau_input_processors = CosineEmbedding(tau_embedding_dim)
        self._tau_embedding = tau_input_processors
        with torch.no_grad():
            embedding_size = self._tau_embedding(torch.zeros(1, self._num_quantiles)).shape[-1]

        def parallel_fc(n_in, n_out, activation, use_ln, init):
            return _ReplicatedFC(n_in, n_out, num_replicas, activation, use_ln, init)

        sizes = [embedding_size, *(tau_fc_layer_params or ())]
        tau_layers = [
            parallel_fc(a, b, torch.relu_, use_fc_ln, kernel_initializer)
            for a, b in zip(sizes[:-1], sizes[1:])
        ]
        tau_layers.append(
            parallel_fc(sizes[-1], width, tau_activation, use_fc_ln, last_kernel_initializer)
        )
        self._tau_layers = nn.Sequential(*tau_layers)
        sizes = [width, *obs_act_tau_joint_fc_layer_params]
        joint = [
            parallel_fc(a, b, torch.relu_, use_fc_ln, kernel_initializer)
            for a, b in zip(sizes[:-1], sizes[1:])
        ]
        joint.append(
            parallel_fc(
                sizes[-1],
                math.prod(self._value_shape),
                math_ops.identity,
                False,
                last_kernel_initializer,
            )
        )
        self._joint_layers = nn.Sequential(*joint)

    @property
    def num_replicas(self) -> int:
        return self._num_replicas

    @property
    def num_quantiles(self) -> int:
        return self._num_quantiles

    def make_parallel(self, n: int) -> CriticQuantileNetwork:
        """``n`` independent critics like this one (ALF's way to replicate it)."""
        if self._num_replicas != 1:
            raise ValueError(f"{self._name}: make_parallel of a network already parallel")
        args = self.saved_args
        args["num_replicas"] = n
        return CriticQuantileNetwork(**args)

    def forward(self, inputs, state=()):
        """``(((observation, action), tau [B, N]), state)`` → ``([B, (R,) N, ...], state)``."""
        critic_inputs, tau = inputs
        psi, _ = self._obs_act_encoder(critic_inputs)  # [B, H] or [B, R, H]
        batch, num = tau.shape
        r = self._num_replicas
        psi = psi.reshape(batch, r, 1, -1).transpose(0, 1)  # [R, B, 1, H]
        phi = self._tau_layers(self._tau_embedding(tau).reshape(batch * num, -1))  # [R, BN, H]
        x = (phi.reshape(r, batch, num, -1) * psi).reshape(r, batch * num, -1)
        value = self._joint_layers(x).reshape(r, batch, num, *self._value_shape)
        value = value.transpose(0, 1)  # [B, R, N, ...]
        return (value.squeeze(1) if r == 1 else value), state

    @property
    def output_spec(self) -> TensorSpec:
        shape = (self._num_quantiles, *self._value_shape)
        return TensorSpec(shape if self._num_replicas == 1 else (self._num_replicas, *shape))
