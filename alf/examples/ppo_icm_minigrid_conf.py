"""PPO + ICM (Pathak et al. 2017) on MiniGrid-DoorKey-8x8: ``ppo_minigrid_conf.py`` inside
an ``Agent`` whose ``ICMAlgorithm`` (a 64-unit encoder, trained by its inverse model) pays
the forward model's surprise. ``pip install alf[minigrid]``.
"""

import torch

import alf
from alf.algorithms.agent import Agent
from alf.algorithms.icm_algorithm import ICMAlgorithm
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.networks.encoding_networks import EncodingNetwork
from alf.optimizers import Adam

alf.import_config("ppo_minigrid_conf.py")


def _icm(observation_spec, action_spec):
    encoder = EncodingNetwork(observation_spec, fc_layer_params=(64,), activation=torch.relu_)
    return ICMAlgorithm(action_spec, observation_spec, hidden_size=128, encoding_net=encoder)


alf.config(
    "Agent",
    rl_algorithm_cls=PPOAlgorithm,
    intrinsic_reward_module=_icm,
    intrinsic_reward_coef=0.1,
    optimizer=Adam(lr=5e-4, eps=1e-5, gradient_clipping=0.5),
)
alf.config("TrainerConfig", algorithm_ctor=Agent)
