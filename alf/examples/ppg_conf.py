"""Base conf for PPG written the ALF way: ``from alf.examples import ppg_conf`` in a task
conf, which then sets the environment, ``PPGAlgorithm``'s encoder, optimizers and
``aux_options``, and the training schedule.

The trainer builds an ``Agent`` whose RL algorithm is ``PPGAlgorithm`` (no entropy target);
PPO's loss without an entropy bonus and with normalized advantages; evaluation samples
the policy with probability 0.1 (ALF's setting for PPG). ALF's
``make_ddp_performer.find_unused_parameters`` is not needed: alf's data-parallel ranks
average gradients themselves (a parameter without one counts as zero).
"""

import alf
from alf.algorithms.agent import Agent
from alf.algorithms.ppg_algorithm import PPGAlgorithm
from alf.algorithms.ppo_loss import PPOLoss  # noqa: F401 (configured by name below)

alf.config("Agent", rl_algorithm_cls=PPGAlgorithm, enforce_entropy_target=False)
alf.config("PPOLoss", entropy_regularization=None, normalize_advantages=True)
alf.config(
    "TrainerConfig",
    algorithm_ctor=Agent,
    whole_replay_buffer_training=True,
    clear_replay_buffer=True,
    epsilon_greedy=0.1,
)
