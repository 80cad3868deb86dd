"""``tiny_ppo_conf.py`` with an ``ObservationNormalizer`` (rollout updates) and 10 steps per env
of prenormalization, for trainer tests of data-transformer statistics."""

import functools

import alf
from alf.data_transformers import ObservationNormalizer

alf.import_config("tiny_ppo_conf.py")

alf.config(
    "TrainerConfig",
    data_transformer_ctor=[functools.partial(ObservationNormalizer, update_mode="rollout")],
    num_prenormalization_steps=10,
    evaluate=True,
)
