"""PPO on Atari Breakout (``BreakoutNoFrameskip-v4``; ``pip install 'alf[atari]'``).

Hyperparameters are rl-baselines3-zoo's for Stable-Baselines3 PPO on Atari
(``hyperparams/ppo.yml``, entry ``atari``), the settings of its published Atari results:
8 envs, ``n_steps`` 128, 4 epochs of minibatches of 256, learning rate 2.5e-4 and clip
range 0.1 both decaying linearly to 0, entropy coefficient 0.01, value coefficient 0.5,
and SB3's PPO defaults: gamma 0.99, GAE lambda 0.95, gradient norm clipped at 0.5, Adam
eps 1e-5, advantages normalized per minibatch, orthogonal init (gain sqrt 2; policy 0.01,
value 1), 10M agent steps (40M frames). The network is SB3's ``CnnPolicy``: one Nature-CNN
(32 8x8/4, 64 4x4/2, 64 3x3/1, fc 512; ``atari_networks.py``) shared by the policy and the
value function (``PPOAlgorithm.encoding_network_ctor``), each a linear head on its 512
features, the encoder trained by both losses.
The two linear schedules run over 10M env steps whatever ``num_env_steps`` is, so a shorter
run (docs/atari.md) follows the start of the 10M-step run it is compared with.

The Atari setup is ``suite_atari.load`` (``DMAtariPreprocessing``: frame skip 4 with
max-pooling, 84x84 gray, 1-30 no-op starts, FIRE; a lost life has discount 0 for the values
but the game goes on; 27,000-step time limit) and, as ALF's Atari confs, three data
transformers: ``FrameStacker`` (4 frames), ``ImageScaleTransformer`` (uint8 to ``[0, 1]``,
SB3's division by 255) and ``RewardClipping`` to ``[-1, 1]`` (SB3 clips to the sign, which
is the same for Atari's integer rewards). docs/atari.md says how this compares with SB3's
``AtariWrapper``.

Deviations from SB3: a lost life is a discount-0 step rather than an episode end (the frame
stack runs on across it). (Until the shared encoder came in, the actor and the value function
had a CNN each, which doubled the network work.)
"""

import functools

import torch

import alf
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.data_transformers import FrameStacker, ImageScaleTransformer, RewardClipping
from alf.environments import suite_atari
from alf.examples.atari_networks import nature_cnn_encoder
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.projection_networks import CategoricalProjectionNetwork
from alf.networks.value_networks import ValueNetwork
from alf.optimizers import Adam
from alf.utils.schedulers import LinearScheduler

#: rl-baselines3-zoo's budget: 10M agent steps; the schedules decay to 0 over it.
TOTAL_ENV_STEPS = 10_000_000


def linear_to_zero(start: float) -> LinearScheduler:
    """SB3's ``lin_<start>`` over ``TOTAL_ENV_STEPS`` env steps."""
    return LinearScheduler([(0, start), (TOTAL_ENV_STEPS, 0.0)], progress_type="env_steps")


alf.config(
    "create_environment",
    env_name="BreakoutNoFrameskip-v4",
    env_load_fn=suite_atari.load,
    num_parallel_environments=8,
    nonparallel=True,  # an Atari step (~0.5 ms) costs far less than the networks
)
alf.config("FrameStacker", stack_size=4)
alf.config("ImageScaleTransformer", min=0.0, max=1.0)
alf.config("RewardClipping", minmax=(-1.0, 1.0))

alf.config(
    "PPOLoss",
    gamma=0.99,
    td_lambda=0.95,
    normalize_advantages=True,
    entropy_regularization=0.01,
    td_loss_weight=0.5,
    importance_ratio_clipping=linear_to_zero(0.1),
)
alf.config(
    "PPOAlgorithm",
    # SB3's CnnPolicy: one Nature-CNN, a linear policy head (init gain 0.01) and a linear
    # value head (gain 1) on its features
    encoding_network_ctor=nature_cnn_encoder,
    actor_network_ctor=functools.partial(
        ActorDistributionNetwork,
        discrete_projection_net_ctor=functools.partial(
            CategoricalProjectionNetwork,
            kernel_initializer=functools.partial(torch.nn.init.orthogonal_, gain=0.01),
        ),
    ),
    value_network_ctor=functools.partial(
        ValueNetwork,
        last_kernel_initializer=functools.partial(torch.nn.init.orthogonal_, gain=1.0),
    ),
    loss_class=PPOLoss,
    optimizer=Adam(lr=linear_to_zero(2.5e-4), eps=1e-5, gradient_clipping=0.5),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPOAlgorithm,
    data_transformer_ctor=[FrameStacker, ImageScaleTransformer, RewardClipping],
    unroll_length=128,
    mini_batch_length=1,
    mini_batch_size=256,
    num_updates_per_train_iter=4,
    num_env_steps=TOTAL_ENV_STEPS,
    num_iterations=0,
    evaluate=True,
    eval_interval=100,
    num_eval_episodes=10,
    num_eval_environments=1,
    summary_interval=10,
    num_checkpoints=5,
)
