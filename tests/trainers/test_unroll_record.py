"""The run's record of its unroll hashes (``alf.trainers.unroll_record``), on the tiny PPO
CartPole conf in this process: one line per iteration with the hash of that iteration's
unroll, the same for the same seed and different for another, a resumed run's file equal
to the uninterrupted run's (the lines an interrupted run left after its checkpoint
dropped), the flag that turns it off, and rank 0 hashing the ranks' digests in rank
order."""

import json
import os

import pytest

from alf.trainers import unroll_record
from alf.trainers.unroll_record import HASHES_FILE, UnrollHashRecord, read_hashes
from alf.utils import unroll_hash
from tests.trainers.test_policy_trainer import make_trainer

FOUR = ("TrainerConfig.num_iterations=4", "TrainerConfig.evaluate=False")


def _train(root_dir, *conf_params, stop_after=None):
    trainer = make_trainer(root_dir, *FOUR, *conf_params)
    seen = []
    observe = trainer.algorithm._unroll_observer
    trainer.algorithm.set_unroll_observer(lambda u: (seen.append(u), observe(u)))
    trainer.train(stop_after=stop_after)
    return seen


def _text(root_dir):
    with open(os.path.join(root_dir, HASHES_FILE)) as f:
        return f.read()


@pytest.fixture(scope="module")
def seed_5_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("seed5")
    unrolls = _train(root, "TrainerConfig.random_seed=5", "TrainerConfig.checkpoint_interval=2")
    return root, unrolls


def test_one_line_per_iteration_with_the_hash_of_its_unroll(seed_5_run):
    root, unrolls = seed_5_run
    entries = read_hashes(os.path.join(root, HASHES_FILE))
    assert [(e["iteration"], e["env_steps"]) for e in entries] == [
        (i, 32 * i) for i in (1, 2, 3, 4)
    ]
    assert len(unrolls) == 4
    for entry, unroll in zip(entries, unrolls, strict=True):
        assert entry["unroll_sha256"] == unroll_hash.unroll_hash(unroll_hash.env_digests(unroll))
    assert len({e["unroll_sha256"] for e in entries}) == 4
    assert _text(root).splitlines()[0] == json.dumps(entries[0], separators=(", ", ": "))


def test_same_seed_same_file_another_seed_other_hashes(seed_5_run, tmp_path):
    root, _ = seed_5_run
    _train(tmp_path / "again", "TrainerConfig.random_seed=5", "TrainerConfig.checkpoint_interval=2")
    assert _text(tmp_path / "again") == _text(root)
    _train(tmp_path / "other", "TrainerConfig.random_seed=6", "TrainerConfig.checkpoint_interval=2")
    other = read_hashes(os.path.join(tmp_path / "other", HASHES_FILE))
    mine = read_hashes(os.path.join(root, HASHES_FILE))
    assert all(a["unroll_sha256"] != b["unroll_sha256"] for a, b in zip(other, mine, strict=True))


def test_a_resumed_run_writes_the_file_of_the_uninterrupted_run(seed_5_run, tmp_path):
    root, _ = seed_5_run
    resumed = tmp_path / "resumed"
    params = ("TrainerConfig.random_seed=5", "TrainerConfig.checkpoint_interval=2")
    _train(resumed, *params, stop_after=2)
    assert len(read_hashes(os.path.join(resumed, HASHES_FILE))) == 2
    # an interrupted run left a line after its checkpoint of iteration 2 (and a torn one)
    with open(os.path.join(resumed, HASHES_FILE), "a") as f:
        f.write('{"iteration": 3, "env_steps": 96, "unroll_sha256": "stale"}\n{"itera')
    assert len(_train(resumed, *params)) == 2  # iterations 3 and 4: it resumed
    assert _text(resumed) == _text(root)


def test_the_flag_turns_the_record_off_and_stale_lines_still_go(tmp_path):
    trainer = make_trainer(tmp_path / "a", *FOUR, "TrainerConfig.record_unroll_hashes=False")
    assert trainer.algorithm._unroll_observer is None
    trainer.train(stop_after=1)
    assert not os.path.exists(os.path.join(tmp_path / "a", HASHES_FILE))
    # a fresh run where a crashed one (no checkpoint) left its lines
    os.makedirs(tmp_path / "b" / "train")
    with open(os.path.join(tmp_path / "b", HASHES_FILE), "w") as f:
        f.write('{"iteration": 1, "env_steps": 32, "unroll_sha256": "stale"}\n')
    make_trainer(tmp_path / "b", *FOUR, "TrainerConfig.record_unroll_hashes=False").train()
    assert _text(tmp_path / "b") == ""


def test_rank_zero_hashes_the_gathered_digests_in_rank_order(tmp_path, monkeypatch):
    class _Algorithm:
        def set_unroll_observer(self, observer):
            self.observer = observer

    algorithm = _Algorithm()
    record = UnrollHashRecord(str(tmp_path), algorithm)
    mine, theirs = [b"\x00" * 32, b"\x01" * 32], [b"\x02" * 32]
    mine_t, theirs_t = [b"\x03" * 32, b"\x04" * 32], [b"\x05" * 32]

    monkeypatch.setattr(
        unroll_record.unroll_hash, "env_digest_pairs", lambda unroll: (mine, mine_t)
    )
    monkeypatch.setattr(unroll_record.collectives, "is_active", lambda: True)
    monkeypatch.setattr(unroll_record.collectives, "is_main", lambda: True)
    monkeypatch.setattr(unroll_record.collectives, "world_size", lambda: 2)
    monkeypatch.setattr(
        unroll_record.collectives, "all_gather_objects", lambda x: [x, (theirs, theirs_t)]
    )
    algorithm.observer("an unroll")
    record.commit(7, 224)
    (entry,) = read_hashes(record.path)
    assert entry == {
        "iteration": 7,
        "env_steps": 224,
        "unroll_sha256": unroll_hash.unroll_hash(mine + theirs),
        "trajectory_sha256": unroll_hash.unroll_hash(mine_t + theirs_t),
        "learner_ranks": 2,
    }
    monkeypatch.setattr(unroll_record.collectives, "is_main", lambda: False)  # rank 1
    algorithm.observer("an unroll")
    record.commit(8, 256)
    assert len(read_hashes(record.path)) == 1


def test_continue_from_keeps_the_lines_up_to_the_checkpoint(tmp_path):
    class _Algorithm:
        def set_unroll_observer(self, observer):
            pass

    record = UnrollHashRecord(str(tmp_path), _Algorithm())
    os.makedirs(os.path.dirname(record.path))
    lines = [json.dumps({"iteration": i, "env_steps": i, "unroll_sha256": "h"}) for i in (1, 2, 3)]
    with open(record.path, "w") as f:
        f.write("\n".join(lines) + "\n")
    record.continue_from(3)
    assert [e["iteration"] for e in read_hashes(record.path)] == [1, 2, 3]
    record.continue_from(1)
    assert [e["iteration"] for e in read_hashes(record.path)] == [1]
    record.continue_from(0)
    assert read_hashes(record.path) == [] and os.listdir(os.path.dirname(record.path)) == [
        "unroll_hashes.jsonl"
    ]
