"""QR-SAC on MuJoCo HalfCheetah-v5 (needs ``pip install -e '.[mujoco]'``).

Soft actor-critic with quantile-regression critics (``alf.algorithms.qrsac_algorithm``):
twin critics of 50 quantiles each, the target the minimum of each quantile over the two
target critics minus α log π (``use_entropy_reward``), the actor maximizing the mean of
those quantiles. Otherwise ``sac_halfcheetah_conf.py``'s settings: 256x256 ReLU actor and
critics with PyTorch's default ``nn.Linear`` init, Adam lr 3e-4, batch 256, gamma 0.99,
tau 0.005, replay buffer 1e6, one gradient step per env step, automatic entropy tuning,
10,000 steps before the first update, 1e6 env steps.
"""

import functools

import torch

import alf
from alf.algorithms.qrsac_algorithm import QrsacAlgorithm
from alf.algorithms.quantile_td_loss import OneStepTDQRLoss
from alf.algorithms.sac_algorithm import SquashedNormalActorNetwork
from alf.initializers import torch_default_init
from alf.networks.critic_networks import CriticNetwork
from alf.tensor_specs import TensorSpec

alf.import_config("sac_sb3_conf.py")

alf.config("create_environment", env_name="HalfCheetah-v5")
hidden = (256, 256)
num_quantiles = 50
alf.config(
    "QrsacAlgorithm",
    actor_network_ctor=functools.partial(
        SquashedNormalActorNetwork,
        fc_layer_params=hidden,
        activation=torch.relu_,
        kernel_initializer=torch_default_init,
    ),
    critic_network_ctor=functools.partial(
        CriticNetwork,
        joint_fc_layer_params=hidden,
        activation=torch.relu_,
        kernel_initializer=torch_default_init,
        last_kernel_initializer=torch_default_init,
        output_tensor_spec=TensorSpec((num_quantiles,)),
    ),
    critic_loss_ctor=functools.partial(OneStepTDQRLoss, num_quantiles=num_quantiles, gamma=0.99),
    use_entropy_reward=True,
)
alf.config("NormalProjectionNetwork", kernel_initializer=torch_default_init)  # mean/std heads
alf.config(
    "TrainerConfig",
    algorithm_ctor=QrsacAlgorithm,
    initial_collect_steps=10_000,
    num_env_steps=1_000_000,
    eval_interval=10_000,
    num_eval_episodes=5,
    num_eval_environments=5,
    num_checkpoints=10,
)
