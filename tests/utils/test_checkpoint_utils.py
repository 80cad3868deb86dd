"""Tests of alf.utils.checkpoint_utils: atomic save, pruning, safe load, fallback."""

import os
import pickle

import pytest
import torch

from alf.utils.checkpoint_utils import BEST_NAME, Checkpointer, CheckpointError


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
