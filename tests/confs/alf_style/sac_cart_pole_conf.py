"""SAC on CartPole-v0 (discrete actions) as an ALF user writes it in Python: the base
conf through ``alf.import_config``, ALF's ``q_network_cls`` argument name, optimizers
named per part, ``OneStepTDLoss`` from its ALF import path."""

import alf

alf.import_config("sac_conf.py")

from alf.algorithms.one_step_loss import OneStepTDLoss  # noqa: E402,F401 (ALF's path)
from alf.networks import QNetwork  # noqa: E402
from alf.utils.losses import element_wise_squared_loss  # noqa: E402

alf.config("create_environment", env_name="CartPole-v0", num_parallel_environments=2)
alf.config("QNetwork", fc_layer_params=(32,))
alf.config(
    "SacAlgorithm",
    q_network_cls=QNetwork,
    actor_optimizer=alf.optimizers.Adam(lr=1e-3, name="actor"),
    critic_optimizer=alf.optimizers.Adam(lr=1e-3, name="critic"),
    alpha_optimizer=alf.optimizers.Adam(lr=1e-3, name="alpha"),
    target_update_tau=0.01,
)
alf.config("OneStepTDLoss", td_error_loss_fn=element_wise_squared_loss, gamma=0.98)
alf.config(
    "TrainerConfig",
    initial_collect_steps=20,
    mini_batch_length=2,
    mini_batch_size=16,
    unroll_length=1,
    num_updates_per_train_iter=1,
    num_iterations=30,
    num_checkpoints=2,
    evaluate=True,
    eval_interval=15,
    num_eval_episodes=2,
    debug_summaries=True,
    summary_interval=10,
    replay_buffer_length=1000,
)
