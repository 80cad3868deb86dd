"""PPO on CartPole-v0 as an ALF user writes it: the base conf imported from
``alf.examples``, ``alf.networks`` classes, ``alf.optimizers.AdamTF`` reached through
``import alf``, ALF's loss function from ``alf.utils.losses``, ALF's environment and
TrainerConfig names. It solves CartPole-v0 (eval return >= 195) in 200 iterations
(``tests/examples/test_alf_style_confs.py``)."""

import alf
from alf.data_transformers import RewardScaling
from alf.examples import ppo_conf  # noqa: F401 (the import configures PPO)
from alf.networks import ActorDistributionNetwork, ValueNetwork
from alf.utils.losses import element_wise_huber_loss

alf.config(
    "create_environment",
    env_name="CartPole-v0",
    num_parallel_environments=8,
    start_serially=False,
)
alf.config("FastParallelEnvironment", start_method="spawn")
alf.config("TrainerConfig", data_transformer_ctor=RewardScaling)
alf.config("RewardScaling", scale=0.01)

alf.config("ActorDistributionNetwork", fc_layer_params=(64,))
alf.config("ValueNetwork", fc_layer_params=(64,))
alf.config(
    "ActorCriticAlgorithm",
    actor_network_cls=ActorDistributionNetwork,
    value_network_cls=ValueNetwork,
    optimizer=alf.optimizers.AdamTF(lr=1e-3),
)
alf.config(
    "PPOLoss",
    entropy_regularization=1e-4,
    gamma=0.98,
    td_error_loss_fn=element_wise_huber_loss,
    normalize_advantages=False,
)
alf.config(
    "TrainerConfig",
    mini_batch_length=1,
    unroll_length=32,
    mini_batch_size=128,
    num_updates_per_train_iter=4,
    num_iterations=200,
    num_checkpoints=4,
    evaluate=True,
    num_evals=4,
    num_eval_episodes=10,
    debug_summaries=False,
    num_summaries=40,
    summarize_gradient_noise_scale=True,
)
