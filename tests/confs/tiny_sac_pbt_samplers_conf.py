"""``tiny_sac_pbt_conf.py`` acting through two local-inference remote samplers (one env
each) that collect an unroll ahead while the learner trains (``max_policy_lag`` 1), with an
``ObservationNormalizer`` updated by the rollouts, and no checkpoint before the end (a
checkpoint restarts the episodes, which drops the unrolls acted ahead): for the test that
after an exploit the samplers act with the copied weights and statistics."""

import functools

import alf
from alf.data_transformers import ObservationNormalizer

alf.import_config("tiny_sac_pbt_conf.py")

alf.config(
    "TrainerConfig",
    data_transformer_ctor=[functools.partial(ObservationNormalizer, update_mode="rollout")],
    checkpoint_interval=1000,
)
alf.config("SamplerConfig", num_samplers=2, inference="local", max_policy_lag=1)
