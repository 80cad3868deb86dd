"""Base conf for DDPG written the ALF way: ``from alf.examples import ddpg_conf`` (or
``alf.import_config('ddpg_conf.py')``) in a task conf, which then sets a continuous-action
environment, the networks, the optimizers and the training schedule.

The trainer builds ``DdpgAlgorithm`` directly, trained on minibatches sampled from a
replay buffer that is kept between iterations.
"""

import alf
from alf.algorithms.ddpg_algorithm import DdpgAlgorithm

alf.config(
    "TrainerConfig",
    algorithm_ctor=DdpgAlgorithm,
    whole_replay_buffer_training=False,
    clear_replay_buffer=False,
)

# ALF's DdpgAlgorithm moves its target networks with tau 0.05 (alf's default is 0.005, as
# Stable-Baselines3's): ALF confs that leave it unset get ALF's value.
alf.config("DdpgAlgorithm", target_update_tau=0.05)
