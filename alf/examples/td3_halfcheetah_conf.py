"""TD3 on MuJoCo HalfCheetah-v5 (needs ``pip install -e '.[mujoco]'``; a 1M-step run takes
many hours on a 2-core CPU).

Hyperparameters follow rl-baselines3-zoo's TD3 entry for the MuJoCo tasks
(hyperparams/td3.yml, ``HalfCheetah-v4: &mujoco-defaults``: 1e6 steps,
learning_starts 10000, Gaussian action noise std 0.1, train_freq 1,
gradient_steps 1, lr 1e-3, batch 256, net [400, 300]) with Stable-Baselines3's
TD3 defaults (buffer 1e6, tau 0.005, gamma 0.99, policy_delay 2,
target_policy_noise 0.2, target_noise_clip 0.5, no gradient clipping, Adam eps
1e-8) — i.e. the TD3 paper's settings with a 256 batch. Mapping onto alf:

- ``train_freq=1, gradient_steps=1`` → ``unroll_length=1``,
  ``num_updates_per_train_iter=1``; batch 256 → ``mini_batch_size=256`` sequences
  of ``mini_batch_length=2`` (one transition each).
- ``learning_starts=10000`` → ``initial_collect_steps=10000`` with uniformly
  random actions until then (``random_initial_collect``).
- ``policy_delay=2`` → ``actor_update_period=2`` and ``target_update_period=2``
  (SB3 and the paper update the targets together with the actor).
- Noise stds are in units of the action half-range; HalfCheetah's actions are in
  [-1, 1], so the numbers are the zoo's.

Deviations: 256x256 networks are common for TD3, the zoo uses 400x300 (kept
here); weights use alf's initializers (SB3: torch's default Linear init);
evaluation is 5 deterministic episodes every 10,000 steps.
"""

import functools

import alf
from alf.algorithms.ddpg_algorithm import Td3Algorithm
from alf.networks.actor_networks import ActorNetwork
from alf.networks.critic_networks import CriticNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="HalfCheetah-v5",
    num_parallel_environments=1,
    nonparallel=True,
)

hidden = (400, 300)
alf.config(
    "Td3Algorithm",
    actor_network_ctor=functools.partial(ActorNetwork, fc_layer_params=hidden),
    critic_network_ctor=functools.partial(CriticNetwork, joint_fc_layer_params=hidden),
    num_critic_replicas=2,
    gamma=0.99,
    exploration_noise_std=0.1,
    random_initial_collect=True,
    target_policy_noise=0.2,
    target_policy_noise_clip=0.5,
    actor_update_period=2,
    target_update_tau=0.005,
    target_update_period=2,
    actor_optimizer=Adam(lr=1e-3),
    critic_optimizer=Adam(lr=1e-3),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=Td3Algorithm,
    unroll_length=1,
    mini_batch_size=256,
    mini_batch_length=2,
    num_updates_per_train_iter=1,
    replay_buffer_length=1_000_000,
    initial_collect_steps=10_000,
    num_env_steps=1_000_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=10_000,
    num_eval_episodes=5,
    num_eval_environments=1,
    summary_interval=1000,
    num_checkpoints=10,
)
