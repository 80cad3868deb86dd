"""Base conf for SAC written the ALF way: ``alf.import_config('sac_conf.py')`` (or
``from alf.examples import sac_conf``) in a task conf, which then sets the environment,
the networks, the optimizers and the training schedule.

The trainer builds an ``Agent`` whose RL algorithm is ``SacAlgorithm``, trained on
minibatches sampled from a replay buffer that is kept between iterations.
(Stable-Baselines3's SAC hyperparameters, alf's own base, are ``sac_sb3_conf.py``.)
"""

import alf
from alf.algorithms.agent import Agent
from alf.algorithms.sac_algorithm import SacAlgorithm

alf.config("Agent", rl_algorithm_cls=SacAlgorithm)
alf.config(
    "TrainerConfig",
    algorithm_ctor=Agent,
    whole_replay_buffer_training=False,
    clear_replay_buffer=False,
)

# ALF's SacAlgorithm moves its target networks with tau 0.05 (alf's default is 0.005, as
# Stable-Baselines3's): ALF confs that leave it unset get ALF's value.
alf.config("SacAlgorithm", target_update_tau=0.05)
