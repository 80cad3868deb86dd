"""PPO on Hopper-v5 with or without ``ObservationNormalizer`` (``benchmarks.obs_norm_hopper``).

Hyperparameters: rl-baselines3-zoo's tuned PPO Hopper entry — 1 env, n_steps 512,
batch 32, 5 epochs, gamma 0.999, gae_lambda 0.99, lr 9.80828e-5, clip 0.2, ent
0.00229519, vf 0.835671, max_grad_norm 0.7, log_std_init -2, separate 256x256 ReLU
actor and critic with PyTorch's default init — except that the zoo's VecNormalize
(observations and rewards) is replaced by the single switch measured here:

* ``obs_norm=True``: ``ObservationNormalizer(clipping=10, update_mode='rollout')``
  (running mean/std over every unrolled step, clipped to [-10, 10] as VecNormalize's
  ``clip_obs``); ``num_prenormalization_steps`` (a ``define_config``, 0 by default)
  initializes its statistics with the initial policy first;
* ``obs_norm=False``: raw observations.

Rewards are not normalized in either variant. The networks (256x256 ReLU, PyTorch's
default init, log-std init -2) and the rest come from ``alf/examples/ppo_mujoco_conf.py``.
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
