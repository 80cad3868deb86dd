"""Base conf for PPO written the ALF way: ``from alf.examples import ppo_conf`` (or
``alf.import_config('ppo_conf.py')``) in a task conf, which then sets the environment,
the networks and the training schedule.

The trainer builds an ``Agent`` whose RL algorithm is ``PPOAlgorithm``; the entropy
target (``Agent.enforce_entropy_target``) is off, and starts from alpha 1 when a task
conf turns it on. PPO trains on each unroll for several epochs and then discards it.
"""

import alf
from alf.algorithms.agent import Agent
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss

alf.config("Agent", rl_algorithm_cls=PPOAlgorithm, enforce_entropy_target=False)
alf.config("EntropyTargetAlgorithm", initial_alpha=1.0)
alf.config("PPOLoss", entropy_regularization=None, normalize_advantages=True)
alf.config("PPOAlgorithm", loss_class=PPOLoss)
alf.config(
    "TrainerConfig",
    algorithm_ctor=Agent,
    whole_replay_buffer_training=True,
    clear_replay_buffer=True,
)
