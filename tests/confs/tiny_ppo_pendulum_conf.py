"""A seconds-long PPO Pendulum (continuous actions, Gaussian policy) with an
``ObservationNormalizer`` and prenormalization, for the export tests: the exported policy
must fold in the normalizer's statistics."""

import functools

import alf
from alf.data_transformers import ObservationNormalizer

alf.import_config("ppo_pendulum_conf.py")

alf.config("create_environment", num_parallel_environments=2)
alf.config(
    "TrainerConfig",
    data_transformer_ctor=[functools.partial(ObservationNormalizer, update_mode="rollout")],
    num_prenormalization_steps=20,
    unroll_length=32,
    mini_batch_size=32,
    num_updates_per_train_iter=2,
    num_env_steps=0,
    num_iterations=4,
    checkpoint_interval=4,
    evaluate=False,
    summary_interval=1,
    random_seed=1,
    progress_bar=False,
)
