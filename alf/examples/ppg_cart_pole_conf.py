"""PPG on CartPole-v1 (about a minute on a 2-core CPU).

The policy phase is PPO with the settings of ``ppo_cart_pole_conf.py`` (8 envs, 32 steps,
batch 256, 10 epochs, gamma 0.98, lambda 0.8); every 4 iterations an auxiliary phase of 3
epochs over their 1,024 steps, in minibatches of 8 whole unrolls, distils the value targets
into the policy network's auxiliary head under the KL penalty (β = 1). Separate policy and
value encoders of 64 x 64 tanh units (``DisjointPolicyValueNetwork.is_sharing_encoder``
False). ``alf.examples.ppg_conf`` is the ALF-style base conf (``Agent``) for ALF's PPG
confs; this one names ``PPGAlgorithm`` directly.
"""

import functools

import torch

import alf
from alf.algorithms.ppg_algorithm import PPGAlgorithm, PPGAuxOptions
from alf.networks.encoding_networks import EncodingNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment", env_name="CartPole-v1", num_parallel_environments=8, nonparallel=True
)
alf.config("PPOLoss", gamma=0.98, td_lambda=0.8, td_loss_weight=0.5)
alf.config("PPGAuxPhaseLoss", gamma=0.98, td_lambda=0.8, policy_kl_loss_weight=1.0)
alf.config(
    "PPGAlgorithm",
    encoding_network_ctor=functools.partial(
        EncodingNetwork, fc_layer_params=(64, 64), activation=torch.tanh
    ),
    policy_optimizer=Adam(lr=2e-3),
    aux_optimizer=Adam(lr=2e-3),
    aux_options=PPGAuxOptions(
        interval=4, mini_batch_length=None, mini_batch_size=8, num_updates_per_train_iter=3
    ),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPGAlgorithm,
    unroll_length=32,
    mini_batch_length=1,
    mini_batch_size=256,
    num_updates_per_train_iter=10,
    num_env_steps=100_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=20,
    num_eval_episodes=10,
    num_eval_environments=10,
    summary_interval=10,
    num_checkpoints=5,
)
