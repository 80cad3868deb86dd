"""DQN on Atari Breakout (``BreakoutNoFrameskip-v4``; ``pip install 'alf[atari]'``).

Hyperparameters are rl-baselines3-zoo's for Stable-Baselines3 DQN on Atari
(``hyperparams/dqn.yml``, entry ``atari``), i.e. Nature DQN (Mnih et al. 2015) with SB3's
defaults: one env, replay buffer 100k, learning rate 1e-4, batch 32, learning starts after
100k steps, target network copied every 1,000 env steps, one gradient step every 4 env
steps, epsilon from 1 to 0.01 over the first 10% of the 10M agent steps (40M frames),
gamma 0.99, Huber loss, gradient norm clipped at 10; Nature-CNN (32 8x8/4, 64 4x4/2,
64 3x3/1, fc 512; ``atari_networks.py``). How the SB3 knobs map onto alf's:

- ``train_freq=4, gradient_steps=1`` → ``unroll_length=4``, one update per iteration of
  ``mini_batch_size=32`` transitions (``mini_batch_length=2``, ``n_step=1``).
- ``target_update_interval=1000`` env steps → ``target_update_period=250`` updates, hard
  copies (``target_update_tau=1``).
- ``learning_starts=100000`` → ``initial_collect_steps=100000`` of uniformly random actions.
- ``exploration_fraction=0.1, exploration_final_eps=0.01`` →
  ``rollout_epsilon_greedy=[(0, 1.0), (0.1, 0.01)]`` over the training progress.
- SB3's DQN is Nature DQN: ``double_dqn=False``.

The Atari setup is ``ppo_breakout_conf.py``'s (``suite_atari.load``; ``FrameStacker``,
``ImageScaleTransformer``, ``RewardClipping``): the replay buffer stores single uint8 frames
(100k of them: 0.7 GB) and ``FrameStacker`` stacks them on replay. Evaluation plays with
epsilon 0.05 (Mnih et al. 2015's evaluation protocol) on whole games.
"""

import alf
from alf.algorithms.dqn_algorithm import DqnAlgorithm
from alf.data_transformers import FrameStacker, ImageScaleTransformer, RewardClipping
from alf.environments import suite_atari
from alf.examples.atari_networks import NATURE_CNN_CONV_LAYER_PARAMS, NATURE_CNN_FC_LAYER_PARAMS
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="BreakoutNoFrameskip-v4",
    env_load_fn=suite_atari.load,
    num_parallel_environments=1,
    nonparallel=True,
)
alf.config("FrameStacker", stack_size=4)
alf.config("ImageScaleTransformer", min=0.0, max=1.0)
alf.config("RewardClipping", minmax=(-1.0, 1.0))

alf.config(
    "QNetwork",
    conv_layer_params=NATURE_CNN_CONV_LAYER_PARAMS,
    fc_layer_params=NATURE_CNN_FC_LAYER_PARAMS,
)
alf.config(
    "DqnAlgorithm",
    q_network_ctor=QNetwork,
    gamma=0.99,
    n_step=1,
    double_dqn=False,
    rollout_epsilon_greedy=[(0, 1.0), (0.1, 0.01)],
    epsilon_greedy=0.05,
    random_initial_collect=True,
    target_update_tau=1.0,
    target_update_period=250,
    optimizer=Adam(lr=1e-4, gradient_clipping=10.0),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=DqnAlgorithm,
    data_transformer_ctor=[FrameStacker, ImageScaleTransformer, RewardClipping],
    unroll_length=4,
    mini_batch_size=32,
    mini_batch_length=2,
    num_updates_per_train_iter=1,
    replay_buffer_length=100_000,
    initial_collect_steps=100_000,
    num_env_steps=10_000_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=25_000,  # every 100k env steps
    num_eval_episodes=10,
    num_eval_environments=1,
    summary_interval=1_000,
    num_checkpoints=5,
)
