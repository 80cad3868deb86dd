"""PPO on Hopper-v5 with or without ``ObservationNormalizer`` (``benchmarks.obs_norm_hopper``).

rl-baselines3-zoo's tuned PPO Hopper entry (the networks and the rest from
``alf/examples/ppo_mujoco_conf.py``), its VecNormalize replaced by the switch measured here:
``obs_norm=True``: ``ObservationNormalizer`` over every unrolled step, clipped to [-10, 10] as
VecNormalize's ``clip_obs``, its statistics first initialized over ``prenormalization_steps``
steps of the initial policy (0 by default); ``obs_norm=False``: raw observations. Rewards are
not normalized in either.
"""

import functools

import alf
from alf.algorithms.data_transformer import ObservationNormalizer
from alf.optimizers import Adam

alf.import_config("ppo_mujoco_conf.py")

alf.define_config("obs_norm", True)
alf.define_config("prenormalization_steps", 0)

alf.config("create_environment", env_name="Hopper-v5")
alf.config(
    "PPOLoss",
    gamma=0.999,
    td_lambda=0.99,
    td_loss_weight=0.835671,
    entropy_regularization=0.00229519,
    importance_ratio_clipping=0.2,
)
alf.config("PPOAlgorithm", optimizer=Adam(lr=9.80828e-5, eps=1e-5, gradient_clipping=0.7))
normalizer = functools.partial(ObservationNormalizer, clipping=10.0, update_mode="rollout")
alf.config(
    "TrainerConfig",
    data_transformer_ctor=[normalizer] if alf.get_config_value("obs_norm") else None,
    num_prenormalization_steps=alf.get_config_value("prenormalization_steps"),
    mini_batch_size=32,
    num_updates_per_train_iter=5,
    num_env_steps=100_000,
    evaluate=False,
    num_checkpoints=1,
)
