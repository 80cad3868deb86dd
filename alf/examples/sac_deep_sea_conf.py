"""Discrete SAC alone on DeepSea-v0 (size 12): the off-policy baseline of
``sac_rnd_deep_sea_conf.py``.

Only the path of 12 right moves pays (+1; each right move costs 0.01 / 12,
``alf/environments/deep_sea.py``); SAC's entropy bonus alone does not find it within the
budget. ``AverageEnvInfo/success`` is the share of episodes that took the treasure.
"""

import functools

import alf
from alf.algorithms.sac_algorithm import SacAlgorithm
from alf.environments import deep_sea, suite_gym
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam

DEEP_SEA_SIZE = 12

alf.config(
    "create_environment",
    env_name="alf.environments.deep_sea:DeepSea-v0",
    env_load_fn=functools.partial(suite_gym.load, size=DEEP_SEA_SIZE),
    num_parallel_environments=4,
    nonparallel=True,
)
del deep_sea  # imported to register the id

hidden = (64, 64)
alf.config(
    "SacAlgorithm",
    actor_network_ctor=functools.partial(ActorDistributionNetwork, fc_layer_params=hidden),
    q_network_ctor=functools.partial(QNetwork, fc_layer_params=hidden),
    target_update_tau=0.01,
    optimizer=Adam(lr=1e-3),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=SacAlgorithm,
    unroll_length=4,
    mini_batch_length=2,
    mini_batch_size=64,
    num_updates_per_train_iter=1,
    initial_collect_steps=200,
    replay_buffer_length=20_000,
    num_env_steps=40_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=250,
    num_eval_episodes=1,
    num_eval_environments=1,
    summary_interval=50,
    num_checkpoints=2,
)
