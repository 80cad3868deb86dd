"""The trainer's checkpoint component (``alf.trainers.checkpoints.RunCheckpoints``) and the
progress it owns: a state round trip into another run, when checkpoints are due, the best
evaluation, and the trainer's ``Progress`` being what its schedules read."""

from __future__ import annotations

import types

import torch

from alf.trainers.checkpoints import CKPT_VERSION, RunCheckpoints
from alf.trainers.run_state import RunState
from alf.utils.schedulers import get_progress
from alf.utils.training_progress import current_progress, default_progress
from tests.trainers.test_policy_trainer import assert_same_tensors, make_trainer


def test_a_state_round_trips_into_another_run(tmp_path):
    source = make_trainer(tmp_path / "a", "TrainerConfig.num_iterations=3")
    source.train()
    state = source._checkpoints.state()
    assert (state["version"], state["iteration"], state["env_steps"]) == (CKPT_VERSION, 3, 96)
    after_save = torch.rand(4)  # the draws that follow the saved RNG state

    target = make_trainer(tmp_path / "b", "TrainerConfig.random_seed=77")
    assert target.random_seed == 77
    assert target._checkpoints.restore(state)  # the checkpoint's seed is adopted
    assert (target.iteration, target.env_steps, target.random_seed) == (3, 96, 1)
    assert target._checkpoints.saved_iteration == 3
    assert target._checkpoints.best_eval == source._checkpoints.best_eval
    assert torch.equal(torch.rand(4), after_save)
    assert_same_tensors(target.algorithm.state_dict(), source.algorithm.state_dict())
    assert_same_tensors(target.algorithm.metrics.state_dict(), state["metrics"])
    target.close()


def _checkpoints(tmp_path, **config):
    fields = dict(keep_checkpoints=3, checkpoint_interval=0, num_checkpoints=3)
    fields.update(config)
    run = RunState(1, 1, None, None, num_iterations=9, num_env_steps=0)
    return RunCheckpoints(str(tmp_path), types.SimpleNamespace(**fields), None, run), run


def _due_iterations(checkpoints, run):
    due = []
    for iteration in range(1, run.num_iterations + 1):
        run.iteration = iteration
        if checkpoints.due():
            due.append(iteration)
    return due


def test_num_checkpoints_spreads_them_over_the_budget_and_the_last_is_left_to_the_end(tmp_path):
    checkpoints, run = _checkpoints(tmp_path)
    assert _due_iterations(checkpoints, run) == [3, 6]


def test_checkpoint_interval_wins_over_num_checkpoints(tmp_path):
    checkpoints, run = _checkpoints(tmp_path, checkpoint_interval=2)
    assert _due_iterations(checkpoints, run) == [2, 4, 6, 8]


def test_only_a_better_evaluation_is_kept_as_the_best(tmp_path):
    trainer = make_trainer(tmp_path, "TrainerConfig.num_iterations=1")
    trainer.train()
    checkpoints = trainer._checkpoints
    best = checkpoints.best_eval
    assert not checkpoints.save_best(best)
    assert not checkpoints.save_best(float("nan"))
    assert checkpoints.save_best(best + 1.0)
    assert checkpoints.best_eval == best + 1.0
    saved = checkpoints.checkpointer.load_best()
    assert saved["best_eval"] == best + 1.0 and "replay_buffer" not in saved


def test_the_trainers_progress_is_what_its_schedules_read(tmp_path):
    trainer = make_trainer(tmp_path, "TrainerConfig.num_iterations=4")
    algorithm = trainer.algorithm
    train_iter = algorithm.train_iter
    seen = []

    def recording_train_iter():
        assert current_progress() is trainer.run_state.progress
        seen.append((get_progress("iterations"), get_progress("env_steps"), get_progress()))
        return train_iter()

    algorithm.train_iter = recording_train_iter
    default_before = (default_progress().iterations, default_progress().env_steps)
    trainer.train()
    assert seen == [(0, 0, 0.0), (1, 32, 0.25), (2, 64, 0.5), (3, 96, 0.75)]
    assert current_progress() is default_progress()
    assert (default_progress().iterations, default_progress().env_steps) == default_before
