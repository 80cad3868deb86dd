"""PPO on CartPole-v1 with networks written in ALF's layer language.

``ppo_cart_pole_conf.py``'s experiment, its actor and value networks built as ALF confs
build them: ``alf.nn.Sequential`` of ``alf.layers.FC`` layers ending in a projection
network (actor) or an ``FC`` to one value and ``Reshape(shape=())`` (value). The layers are
created in the order, with the initializers, of ``ppo_cart_pole_conf.py``'s
``ActorDistributionNetwork`` and ``ValueNetwork``, and compute the same: the same seed
gives the same run (tested).
"""

import functools

import torch

import alf
from alf.initializers import orthogonal_init
from alf.networks.projection_networks import CategoricalProjectionNetwork

alf.import_config("ppo_cart_pole_conf.py")

HIDDEN = 64


def _hidden_layers(input_tensor_spec):
    (size,) = input_tensor_spec.shape
    return [
        alf.layers.FC(size, HIDDEN, activation=torch.tanh, kernel_initializer=orthogonal_init),
        alf.layers.FC(HIDDEN, HIDDEN, activation=torch.tanh, kernel_initializer=orthogonal_init),
    ]


def actor_network_ctor(input_tensor_spec, action_spec):
    return alf.nn.Sequential(
        *_hidden_layers(input_tensor_spec),
        CategoricalProjectionNetwork(
            input_size=HIDDEN, action_spec=action_spec, logits_init_output_factor=0.01
        ),
        input_tensor_spec=input_tensor_spec,
    )


def value_network_ctor(input_tensor_spec):
    head_init = functools.partial(torch.nn.init.orthogonal_, gain=1.0)
    return alf.nn.Sequential(
        *_hidden_layers(input_tensor_spec),
        alf.layers.FC(HIDDEN, 1, kernel_initializer=head_init),
        alf.layers.Reshape(shape=()),
        input_tensor_spec=input_tensor_spec,
    )


alf.config(
    "PPOAlgorithm",
    actor_network_ctor=actor_network_ctor,
    value_network_ctor=value_network_ctor,
)
