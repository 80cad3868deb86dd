"""PPG on CartPole-v0 with the settings and imports of ALF's ``ppg_cart_pole_conf.py``: the
base conf ``alf.examples.ppg_conf``, ``RewardScaling`` from ALF's
``alf.algorithms.data_transformer``, ``PPGAuxOptions`` from ``alf.algorithms.ppg_algorithm``,
``PPOLoss.compute_advantages_internally`` and ``PPGAuxPhaseLoss`` configured by name,
``mini_batch_length=None`` (whole unrolls) in both phases."""

import alf
from alf.algorithms.data_transformer import RewardScaling
from alf.algorithms.ppg_algorithm import PPGAlgorithm, PPGAuxOptions  # noqa: F401
from alf.examples import ppg_conf  # noqa: F401 (the import configures PPG)
from alf.networks.encoding_networks import EncodingNetwork
from alf.utils.losses import element_wise_huber_loss

alf.config("create_environment", env_name="CartPole-v0", num_parallel_environments=8)
alf.config("TrainerConfig", data_transformer_ctor=RewardScaling)
alf.config("RewardScaling", scale=0.01)
alf.config("EncodingNetwork", fc_layer_params=(100,))
alf.config(
    "PPGAlgorithm",
    encoding_network_ctor=EncodingNetwork,
    policy_optimizer=alf.optimizers.AdamTF(lr=1e-3),
    aux_optimizer=alf.optimizers.AdamTF(lr=1e-3),
    aux_options=PPGAuxOptions(
        enabled=True,
        interval=8,
        mini_batch_length=None,
        mini_batch_size=8,
        num_updates_per_train_iter=3,
    ),
)
alf.config(
    "PPOLoss",
    compute_advantages_internally=True,
    entropy_regularization=1e-4,
    gamma=0.98,
    td_error_loss_fn=element_wise_huber_loss,
    normalize_advantages=False,
)
alf.config(
    "PPGAuxPhaseLoss",
    td_error_loss_fn=element_wise_huber_loss,
    policy_kl_loss_weight=0.005,
    gamma=0.98,
)
alf.config(
    "TrainerConfig",
    unroll_length=32,
    mini_batch_length=None,
    mini_batch_size=128,
    num_updates_per_train_iter=4,
    num_iterations=200,
    num_checkpoints=5,
    evaluate=True,
    eval_interval=50,
    debug_summaries=False,
    summarize_grads_and_vars=False,
    summary_interval=5,
)
