"""ALF's TrainerConfig fields alf has no field for: mapped, warned about, or refused."""

import logging

import pytest

from alf.algorithms import alf_trainer_fields
from alf.algorithms.config import TrainerConfig


def test_num_summaries_and_num_evals_map_to_intervals():
    config = TrainerConfig(num_iterations=200, num_summaries=40, num_evals=4)
    assert (config.summary_interval, config.eval_interval) == (5, 50)
    config = TrainerConfig(num_iterations=3, num_evals=10)
    assert config.eval_interval == 1


def test_mapping_needs_num_iterations():
    with pytest.raises(ValueError, match=r"TrainerConfig.num_summaries needs num_iterations > 0"):
        TrainerConfig(num_iterations=0, num_env_steps=100, num_summaries=10)
    with pytest.raises(ValueError, match="TrainerConfig.num_evals must be a positive int"):
        TrainerConfig(num_evals=0)


def test_fields_without_effect_are_warned_about_by_name(caplog):
    with caplog.at_level(logging.WARNING):
        TrainerConfig(summarize_gradient_noise_scale=True, async_eval=True, ml_type="rl")
    messages = [r.getMessage() for r in caplog.records]
    assert (
        "TrainerConfig.summarize_gradient_noise_scale=True has no effect in alf: alf writes "
        "no gradient-noise-scale summaries" in messages
    )
    assert any(m.startswith("TrainerConfig.async_eval=True has no effect") for m in messages)
    assert any(m.startswith("TrainerConfig.ml_type='rl' has no effect") for m in messages)


def test_fields_that_change_training_are_refused_by_name():
    for name, value in [("async_unroll", True), ("ml_type", "sl"), ("unroll_with_grad", True)]:
        with pytest.raises(ValueError, match=f"TrainerConfig.{name}={value!r} is not supported"):
            TrainerConfig(**{name: value})


def test_every_alf_field_is_a_trainer_config_field():
    names = set(TrainerConfig.__dataclass_fields__)
    assert set(alf_trainer_fields.FIELDS) <= names
    assert len(alf_trainer_fields.FIELDS) == 33
    assert "enable_amp" not in alf_trainer_fields.FIELDS  # alf's own field


def test_flags_written_as_zero_or_one_become_bools():
    config = TrainerConfig(summarize_grads_and_vars=1, debug_summaries=0)
    assert config.summarize_grads_and_vars is True and config.debug_summaries is False
    expected = "TrainerConfig.summarize_grads_and_vars=2: expected a bool, got int"
    with pytest.raises(TypeError, match=expected):
        TrainerConfig(summarize_grads_and_vars=2)
