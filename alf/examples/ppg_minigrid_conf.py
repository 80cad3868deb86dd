"""PPG (Cobbe et al. 2021) on MiniGrid-DoorKey-8x8: ``ppo_minigrid_conf.py``'s environment,
PPO loss, optimizer and epochs, with PPG's networks (separate policy and value encoders of
the same sizes as PPO's networks, and the policy's auxiliary value head) and its auxiliary
phase: every 8 iterations (8 x 16 x 64 steps), 3 epochs over their data in minibatches of 8
whole unrolls, distilling the value targets under the KL penalty (β = 1, the paper's).
``pip install alf[minigrid]``.
"""

import functools

import torch

import alf
from alf.algorithms.ppg_algorithm import PPGAlgorithm, PPGAuxOptions
from alf.networks.encoding_networks import EncodingNetwork
from alf.optimizers import Adam

alf.import_config("ppo_minigrid_conf.py")

alf.config("PPGAuxPhaseLoss", gamma=0.99, td_lambda=0.95, policy_kl_loss_weight=1.0)
alf.config(
    "PPGAlgorithm",
    encoding_network_ctor=functools.partial(
        EncodingNetwork, fc_layer_params=(128, 64), activation=torch.tanh
    ),
    policy_optimizer=Adam(lr=5e-4, eps=1e-5, gradient_clipping=0.5),
    aux_optimizer=Adam(lr=5e-4, eps=1e-5, gradient_clipping=0.5),
    aux_options=PPGAuxOptions(
        interval=8, mini_batch_length=None, mini_batch_size=8, num_updates_per_train_iter=3
    ),
)
alf.config("TrainerConfig", algorithm_ctor=PPGAlgorithm)
