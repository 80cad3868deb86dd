"""PPO + RND (Burda et al. 2019) on DeepSea-v0: ``ppo_deep_sea_conf.py`` inside an
``Agent`` whose ``RNDAlgorithm`` pays for novel cells (observations normalized, the
reward divided by its running standard deviation). Plain PPO (the imported conf) never
takes the treasure within the budget; this one does (docs/algorithms.md).
"""

import alf
from alf.algorithms.agent import Agent
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.rnd_algorithm import RNDAlgorithm
from alf.optimizers import Adam

alf.import_config("ppo_deep_sea_conf.py")

alf.config("RNDAlgorithm", reward_adapt_speed=8.0, fc_layer_params=(64, 64), embedding_dim=32)
alf.config(
    "Agent",
    rl_algorithm_cls=PPOAlgorithm,
    intrinsic_reward_module=RNDAlgorithm,
    intrinsic_reward_coef=0.1,
    optimizer=Adam(lr=1e-3, eps=1e-5, gradient_clipping=0.5),
)
alf.config("TrainerConfig", algorithm_ctor=Agent)
