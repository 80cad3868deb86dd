"""PPO + ICM (Pathak et al. 2017) on DeepSea-v0: ``ppo_deep_sea_conf.py`` inside an
``Agent`` whose ``ICMAlgorithm`` pays the forward model's surprise at each transition
(reward normalized with ALF's adaptive normalizer). Plain PPO (the imported conf) never
takes the treasure within the budget (docs/algorithms.md).
"""

import alf
from alf.algorithms.agent import Agent
from alf.algorithms.icm_algorithm import ICMAlgorithm
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.optimizers import Adam

alf.import_config("ppo_deep_sea_conf.py")

alf.config("ICMAlgorithm", hidden_size=64, reward_adapt_speed=8.0)
alf.config(
    "Agent",
    rl_algorithm_cls=PPOAlgorithm,
    intrinsic_reward_module=ICMAlgorithm,
    intrinsic_reward_coef=0.03,
    optimizer=Adam(lr=1e-3, eps=1e-5, gradient_clipping=0.5),
)
alf.config("TrainerConfig", algorithm_ctor=Agent)
