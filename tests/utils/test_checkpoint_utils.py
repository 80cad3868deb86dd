"""Tests of alf.utils.checkpoint_utils (atomic save, pruning, safe load, fallback) and of the
finite checks of alf.utils.finite."""

import os
import pickle

import pytest
import torch

from alf.data_structures import TimeStep
from alf.utils import checkpoint_utils
from alf.utils.checkpoint_utils import BEST_NAME, Checkpointer, CheckpointError
from alf.utils.finite import NonFiniteError, check_time_step


def _state(value):
    return {"step": value, "weights": torch.full((3,), float(value)), "meta": {"name": "x"}}


def test_save_load_round_trip_and_pruning(tmp_path):
    ckpt = Checkpointer(str(tmp_path), keep=2)
    for step in (1, 2, 3):
        ckpt.save(step, _state(step))
    assert ckpt.steps() == [2, 3]
    state = ckpt.load()
    assert state["step"] == 3 and state["weights"].tolist() == [3.0, 3.0, 3.0]
    assert ckpt.load(2)["meta"] == {"name": "x"}
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp")]


def test_best_checkpoint_is_kept_after_pruning(tmp_path):
    ckpt = Checkpointer(str(tmp_path), keep=1)
    ckpt.save(1, _state(1))
    ckpt.save_best(_state(1), score=10.0)
    ckpt.save(2, _state(2))
    assert ckpt.steps() == [2]
    best = ckpt.load_best()
    assert best["step"] == 1 and best["best_score"] == 10.0
    assert os.path.exists(tmp_path / BEST_NAME)


def test_empty_dir_returns_none(tmp_path):
    assert Checkpointer(str(tmp_path / "none")).load() is None


def test_corrupt_newest_falls_back_with_warning(tmp_path, caplog):
    ckpt = Checkpointer(str(tmp_path), keep=3)
    ckpt.save(1, _state(1))
    ckpt.save(2, _state(2))
    with open(ckpt.path(2), "wb") as f:
        f.write(b"garbage, not a checkpoint")
    state = ckpt.load()
    assert state["step"] == 1
    assert "ckpt-2.pt" in caplog.text


def test_all_corrupt_raises_naming_files(tmp_path):
    ckpt = Checkpointer(str(tmp_path))
    ckpt.save(5, _state(5))
    with open(ckpt.path(5), "wb") as f:
        f.write(b"\x00\x01")
    with pytest.raises(CheckpointError, match="ckpt-5.pt"):
        ckpt.load()


class _Payload:
    def __reduce__(self):
        return (os.system, ("touch " + _Payload.marker,))


def test_pickled_payload_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    _Payload.marker = str(marker)
    ckpt = Checkpointer(str(tmp_path))
    path = ckpt.path(7)
    with open(path, "wb") as f:
        torch.save({"evil": _Payload()}, f, pickle_module=pickle)
    assert not marker.exists()
    with pytest.raises(CheckpointError, match="ckpt-7.pt"):
        ckpt.load(7)
    assert not marker.exists()


def test_missing_step_error_lists_available(tmp_path):
    ckpt = Checkpointer(str(tmp_path))
    ckpt.save(1, _state(1))
    with pytest.raises(CheckpointError, match=r"available steps: \[1\]"):
        ckpt.load(9)


def _files(directory):
    return {n: (directory / n).read_bytes() for n in sorted(os.listdir(directory))}


def test_non_finite_weights_are_never_written_nor_best_nor_cause_pruning(tmp_path):
    ckpt = Checkpointer(str(tmp_path), keep=2)
    for step in (1, 2):
        ckpt.save(step, {"algorithm": {"net.weight": torch.full((2,), float(step))}})
    ckpt.save_best({"algorithm": {"net.weight": torch.ones(2)}}, score=5.0)
    before = _files(tmp_path)
    poisoned = {"net.bias": torch.zeros(2), "net.weight": torch.tensor([1.0, float("nan")])}
    expected = (
        r"algorithm.net.weight \(nan\) is not finite: ckpt-3.pt was not written, and the "
        rf"checkpoints already in {tmp_path} are kept"
    )
    with pytest.raises(NonFiniteError, match=expected):
        ckpt.save(3, {"algorithm": poisoned, "step": 3})
    with pytest.raises(NonFiniteError, match=r"\(-inf\) is not finite: ckpt-best.pt was not"):
        ckpt.save_best({"algorithm": {"w": torch.tensor([-float("inf")])}}, score=9.0)
    assert _files(tmp_path) == before  # nothing written, nothing pruned
    assert ckpt.steps() == [1, 2] and ckpt.load_best()["best_score"] == 5.0


def test_check_time_step_names_field_env_id_and_steps():
    time_step = TimeStep(
        step_type=torch.zeros(3, dtype=torch.int32),
        reward=torch.zeros(3),
        discount=torch.ones(3),
        observation={"pos": torch.zeros(3, 2), "vel": torch.zeros(3, 2)},
        env_id=torch.tensor([4, 6, 9]),
    )
    check_time_step(time_step, 12)  # all finite: nothing happens
    bad = time_step._replace(reward=torch.tensor([0.0, float("nan"), 0.0]))
    with pytest.raises(NonFiniteError) as error:
        check_time_step(bad, 12)
    assert str(error.value) == (
        "the environment returned a non-finite reward (nan) from env_id 6 after 12 env steps; "
        "training stops before learning from it"
    )
    vel = torch.zeros(3, 2)
    vel[2, 1] = float("inf")
    bad = time_step._replace(observation={"pos": torch.zeros(3, 2), "vel": vel})
    with pytest.raises(NonFiniteError, match=r"non-finite observation.vel \(inf\) from env_id 9"):
        check_time_step(bad, 12)


class PPOAlgorithm:  # the short name of alf's PPOAlgorithm, in another module
    learner = None


class _ReplayLearner:
    keeps_replay_buffer = True


def test_check_same_algorithm_names_both_classes_in_full_when_their_names_clash(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(checkpoint_utils.common, "parsed_conf_args", lambda: None)
    held = "alf.algorithms.ppo_algorithm.PPOAlgorithm"
    state = {"algorithm_class": held, "conf_file": "ppo_conf.py"}
    with pytest.raises(CheckpointError) as info:
        checkpoint_utils.check_same_algorithm(str(tmp_path), state, PPOAlgorithm())
    assert str(info.value) == (
        f"root_dir {tmp_path} holds a run of {held} (ppo_conf.py); this conf builds "
        f"{__name__}.PPOAlgorithm: train into a new --root_dir, or remove {tmp_path} to "
        "start over"
    )
    own = PPOAlgorithm()
    state["algorithm_class"] = checkpoint_utils.algorithm_class(own)
    checkpoint_utils.check_same_algorithm(str(tmp_path), state, own)  # the same class
    with pytest.raises(CheckpointError, match="checkpoint keeps a replay buffer"):
        checkpoint_utils.check_same_algorithm(str(tmp_path), {"replay_buffer": {}}, own)
    own.learner = _ReplayLearner()  # unknown class (an old checkpoint), a learner with a buffer
    checkpoint_utils.check_same_algorithm(str(tmp_path), {"replay_buffer": {}}, own)
