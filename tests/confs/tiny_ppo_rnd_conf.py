"""``tiny_ppo_conf.py`` with ALF's composition: PPO inside an ``Agent`` with an RND
intrinsic reward (observation and reward normalization on), for the tests of composed
agents in every layout (in-process, remote samplers, two learner ranks, resume)."""

import alf
from alf.algorithms.agent import Agent
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.rnd_algorithm import RNDAlgorithm
from alf.optimizers import Adam

alf.import_config("tiny_ppo_conf.py")

alf.config("RNDAlgorithm", reward_adapt_speed=8.0, fc_layer_params=(16,), embedding_dim=8)
alf.config(
    "Agent",
    rl_algorithm_cls=PPOAlgorithm,
    intrinsic_reward_module=RNDAlgorithm,
    intrinsic_reward_coef=0.1,
    optimizer=Adam(lr=1e-3, eps=1e-5, gradient_clipping=0.5),
)
alf.config("TrainerConfig", algorithm_ctor=Agent)
