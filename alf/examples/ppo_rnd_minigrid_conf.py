"""PPO + RND (Burda et al. 2019) on MiniGrid-DoorKey-8x8: ``ppo_minigrid_conf.py`` inside
an ``Agent`` whose ``RNDAlgorithm`` pays for novel observations. ``pip install
alf[minigrid]``.
"""

import alf
from alf.algorithms.agent import Agent
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.rnd_algorithm import RNDAlgorithm
from alf.optimizers import Adam

alf.import_config("ppo_minigrid_conf.py")

alf.config("RNDAlgorithm", reward_adapt_speed=8.0, fc_layer_params=(128, 128), embedding_dim=64)
alf.config(
    "Agent",
    rl_algorithm_cls=PPOAlgorithm,
    intrinsic_reward_module=RNDAlgorithm,
    intrinsic_reward_coef=0.1,
    optimizer=Adam(lr=5e-4, eps=1e-5, gradient_clipping=0.5),
)
alf.config("TrainerConfig", algorithm_ctor=Agent)
