"""DQN on CartPole-v0 configured with the ``DqnAlgorithm`` arguments of ALF's
``dqn_breakout_conf.py``: ``q_network_cls``, a percent ``LinearScheduler`` for
``rollout_epsilon_greedy``, ``critic_loss_ctor=functools.partial(TDLoss, td_lambda=0.95)``
and ``q_optimizer``, with ``Agent`` and ALF's ``sac_breakout_conf.py`` training settings
(``mini_batch_length=2``, ``TrainerConfig.epsilon_greedy``) on a small budget. As there
(through ``sac_breakout_conf.py``), the base conf is ALF's ``sac_conf.py``."""

import functools

import alf

alf.import_config("sac_conf.py")

from alf.algorithms.dqn_algorithm import DqnAlgorithm  # noqa: E402
from alf.algorithms.td_loss import TDLoss  # noqa: E402
from alf.networks import QNetwork  # noqa: E402
from alf.optimizers import AdamTF  # noqa: E402
from alf.utils.schedulers import LinearScheduler  # noqa: E402

alf.config("create_environment", env_name="CartPole-v0", num_parallel_environments=2)

q_network_cls = functools.partial(QNetwork, fc_layer_params=(32,))
critic_loss_ctor = functools.partial(TDLoss, td_lambda=0.95)
alf.config(
    "DqnAlgorithm",
    q_network_cls=q_network_cls,
    rollout_epsilon_greedy=LinearScheduler(
        progress_type="percent", schedule=[(0, 1.0), (0.1, 0.1), (1.0, 0.1)]
    ),
    critic_loss_ctor=critic_loss_ctor,
    q_optimizer=AdamTF(lr=5e-4),
)
alf.config("Agent", rl_algorithm_cls=DqnAlgorithm)
alf.config(
    "TrainerConfig",
    epsilon_greedy=0.05,
    initial_collect_steps=20,
    mini_batch_length=2,
    mini_batch_size=16,
    unroll_length=8,
    num_updates_per_train_iter=4,
    num_iterations=30,
    num_checkpoints=2,
    evaluate=True,
    eval_interval=15,
    num_eval_episodes=2,
    debug_summaries=True,
    summary_interval=10,
    replay_buffer_length=1000,
)
