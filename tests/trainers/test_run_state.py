"""The run's state kept outside its ``TrainerConfig`` (``alf.trainers.run_state``), and the
config staying as configured: per-rank shares of the global batch settings, the seed in
force, the budget's fraction, and a learner training on its rank's share."""

from __future__ import annotations

import dataclasses

import pytest

import alf
from alf.algorithms.config import TrainerConfig
from alf.environments.utils import create_environment
from alf.parallel import collectives
from alf.trainers import data_parallel
from alf.trainers.algorithm_factory import create_algorithm
from alf.trainers.run_state import RunState
from alf.utils import common, seeding
from tests.trainers.test_policy_trainer import TINY_CONF, make_trainer


@pytest.fixture
def four_ranks(monkeypatch):
    """This process as rank 2 of 4 learner ranks (the collectives answer for rank 0 too)."""
    monkeypatch.setattr(collectives, "is_active", lambda: True)
    monkeypatch.setattr(collectives, "world_size", lambda: 4)
    monkeypatch.setattr(collectives, "rank", lambda: 2)
    monkeypatch.setattr(collectives, "all_gather_objects", lambda obj: [obj] * 4)
    monkeypatch.setattr(data_parallel, "configured_num_envs", lambda: 8)


def test_each_rank_gets_its_share_and_the_config_keeps_the_totals(four_ranks):
    config = TrainerConfig(mini_batch_size=64, random_seed=5)
    run = RunState.start(config)
    assert run.num_parallel_environments == 2
    assert run.mini_batch_size == 16
    assert run.seed == 5
    assert run.rank_seed == seeding.derived_seed(5, 104729, 2) != 5
    assert config.mini_batch_size == 64 and config.random_seed == 5


def test_a_total_that_does_not_divide_is_an_error_naming_it(four_ranks):
    message = r"TrainerConfig.mini_batch_size=30 is the total over the 4 learner processes"
    with pytest.raises(ValueError, match=message):
        RunState.start(TrainerConfig(mini_batch_size=30))


def test_one_process_keeps_the_configured_values():
    run = RunState.start(TrainerConfig(mini_batch_size=30, random_seed=7))
    assert (run.seed, run.rank_seed) == (7, 7)
    assert run.num_parallel_environments is None
    assert run.mini_batch_size == 30


def test_the_drawn_seed_is_the_runs_and_the_config_stays_unset():
    config = TrainerConfig()
    run = RunState.start(config)
    assert isinstance(run.seed, int) and run.rank_seed == run.seed
    assert config.random_seed is None


def test_fraction_done_and_done_follow_the_first_budget_reached():
    run = RunState(1, 1, None, None, num_iterations=10, num_env_steps=1000)
    run.iteration, run.env_steps = 2, 500
    assert run.fraction_done() == 0.5 and not run.done()
    run.iteration = 8
    assert run.fraction_done() == 0.8
    run.env_steps = 1000
    assert run.fraction_done() == 1.0 and run.done()
    steps_only = RunState(1, 1, None, None, num_iterations=0, num_env_steps=400)
    steps_only.iteration, steps_only.env_steps = 1000, 100
    assert steps_only.fraction_done() == 0.25 and not steps_only.done()


def test_publish_progress_hands_the_counters_to_the_schedules():
    run = RunState(1, 1, None, None, num_iterations=8, num_env_steps=0)
    run.iteration, run.env_steps = 2, 64
    run.publish_progress()
    assert (run.progress.iterations, run.progress.env_steps, run.progress.percent) == (2, 64, 0.25)


def test_adopting_the_checkpoints_seed_rederives_the_rank_seed(monkeypatch):
    monkeypatch.setattr(collectives, "rank", lambda: 1)
    run = RunState(3, 3, None, None, num_iterations=1, num_env_steps=0)
    assert not run.adopt_seed(3)
    assert run.adopt_seed(11)
    assert run.seed == 11 and run.rank_seed == data_parallel.rank_seed(11, 1)
    assert run.eval_seed == seeding.derived_seed(11, 999)
    run.iteration = 4
    # the same on every rank: env g restarts with it plus g, wherever it runs
    assert run.env_restart_seed() == seeding.derived_seed(11, 4)


def test_the_config_is_not_changed_at_run_time(tmp_path):
    trainer = make_trainer(tmp_path, "TrainerConfig.random_seed=None")
    config = trainer.algorithm.config
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.mini_batch_size = 8
    trainer.train()
    assert config.random_seed is None and isinstance(trainer.random_seed, int)
    assert config.mini_batch_size == 32
    assert not hasattr(config, "data_transformer")


def test_the_learner_trains_on_the_runs_minibatch_size():
    """The tiny conf's unroll is 2 envs x 16 steps of length-1 sequences: one minibatch of
    the configured 32, four of a rank's share of 8."""
    alf.reset_configs()
    common.parse_conf_file(TINY_CONF, [])
    config = TrainerConfig()
    sizes = {}
    for share in (None, 8):
        env = create_environment(seed=1)
        try:
            run = None
            if share is not None:
                run = RunState(1, 1, None, share, num_iterations=1, num_env_steps=0)
            algorithm = create_algorithm(config, env, run=run)
            update = algorithm.update_from_experience
            seen = sizes.setdefault(share, [])

            def recording(experience, valid_masks=None, update=update, seen=seen):
                seen.append(experience.time_step.step_type.shape[1])
                return update(experience, valid_masks)

            algorithm.update_from_experience = recording
            algorithm.train_iter()
        finally:
            env.close()
    assert sizes == {None: [32], 8: [8, 8, 8, 8]}
    assert config.mini_batch_size == 32
