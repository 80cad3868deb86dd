"""Recurrent PPO on the memory task with networks in ALF's layer language.

``ppo_rnn_memory_conf.py``'s experiment (``RepeatFirstObservation-v0``: the cue seen at an
episode's start must be repeated later), its recurrent actor and value networks written as
ALF confs write them: ``alf.nn.Sequential`` of an ``alf.layers.FC``, an ``alf.nn.LSTMCell``
(the container carries its state: ``[(), (h, c), ()]``) and a projection network, or an
``FC`` to one value and ``Reshape(shape=())``.
"""

import torch

import alf
from alf.networks.projection_networks import CategoricalProjectionNetwork

alf.import_config("ppo_rnn_memory_conf.py")

HIDDEN = 32


def actor_network_ctor(input_tensor_spec, action_spec):
    (size,) = input_tensor_spec.shape
    return alf.nn.Sequential(
        alf.layers.FC(size, HIDDEN, activation=torch.relu_),
        alf.nn.LSTMCell(HIDDEN, HIDDEN),
        CategoricalProjectionNetwork(input_size=HIDDEN, action_spec=action_spec),
    )


def _small_uniform(weight):
    return torch.nn.init.uniform_(weight, -0.03, 0.03)  # ValueRNNNetwork's value layer


def value_network_ctor(input_tensor_spec):
    (size,) = input_tensor_spec.shape
    return alf.nn.Sequential(
        alf.layers.FC(size, HIDDEN, activation=torch.relu_),
        alf.nn.LSTMCell(HIDDEN, HIDDEN),
        alf.layers.FC(HIDDEN, 1, kernel_initializer=_small_uniform),
        alf.layers.Reshape(shape=()),
    )


alf.config(
    "PPOAlgorithm",
    actor_network_ctor=actor_network_ctor,
    value_network_ctor=value_network_ctor,
)
