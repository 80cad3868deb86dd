"""DDPG on Pendulum as an ALF user writes it: the base conf imported from
``alf.examples``, networks given as ``functools.partial`` of ``alf.networks`` classes,
``alf.optimizers.Adam``, the gym id ``Pendulum-v0`` (translated by alf), ALF's
TrainerConfig fields (``summarize_gradient_noise_scale`` is warned about), the critic loss
configured through ``OneStepTDLoss`` and ALF's target-update tau left to the base conf."""

import functools

import alf
from alf.examples import ddpg_conf  # noqa: F401 (the import configures DDPG)
from alf.networks import ActorNetwork, CriticNetwork
from alf.optimizers import Adam
from alf.utils.losses import element_wise_huber_loss

alf.config("create_environment", env_name="Pendulum-v0", num_parallel_environments=1)

hidden_layers = (32, 32)
alf.config(
    "DdpgAlgorithm",
    actor_network_ctor=functools.partial(ActorNetwork, fc_layer_params=hidden_layers),
    critic_network_ctor=functools.partial(CriticNetwork, joint_fc_layer_params=hidden_layers),
    actor_optimizer=Adam(lr=1e-4),
    critic_optimizer=Adam(lr=1e-3),
    target_update_period=5,
)
alf.config("OneStepTDLoss", td_error_loss_fn=element_wise_huber_loss)
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
    num_eval_episodes=1,
    debug_summaries=True,
    summarize_grads_and_vars=True,
    summarize_gradient_noise_scale=True,
    summary_interval=10,
    replay_buffer_length=1000,
)
