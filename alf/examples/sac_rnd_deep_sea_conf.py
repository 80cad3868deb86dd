"""Discrete SAC + RND on DeepSea-v0: ``sac_deep_sea_conf.py`` inside an ``Agent`` whose
``RNDAlgorithm`` pays for novel cells, trained off-policy: the raw intrinsic reward is
recorded at rollout, stored in the replay buffer, and normalized when replayed.
"""

import alf
from alf.algorithms.agent import Agent
from alf.algorithms.rnd_algorithm import RNDAlgorithm
from alf.algorithms.sac_algorithm import SacAlgorithm
from alf.optimizers import Adam

alf.import_config("sac_deep_sea_conf.py")

alf.config("RNDAlgorithm", reward_adapt_speed=8.0, fc_layer_params=(64, 64), embedding_dim=32)
alf.config(
    "Agent",
    rl_algorithm_cls=SacAlgorithm,
    intrinsic_reward_module=RNDAlgorithm,
    intrinsic_reward_coef=0.03,
    optimizer=Adam(lr=1e-3),
)
alf.config("TrainerConfig", algorithm_ctor=Agent)
