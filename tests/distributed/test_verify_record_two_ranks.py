"""Unroll hashes with two data-parallel learner ranks (``--num_processes 2``): rank 0
records one line per iteration for the envs of both ranks, and ``--verify_record`` run
on two ranks (training into one temporary root_dir that both share, deleted after)
matches them."""

import json
import os

from tests.bin.test_train_play import TINY_CONF
from tests.bin.test_verify_record import SHORT, _run


def test_two_ranks_record_and_verify_the_same_hashes(tmp_path):
    root = tmp_path / "run"
    code, _, stderr = _run(
        "--conf", TINY_CONF, "--root_dir", root, "--nostore_snapshot", "--num_processes", 2, *SHORT
    )
    assert code == 0, stderr[-3000:]
    with open(root / "train" / "unroll_hashes.jsonl") as f:
        entries = [json.loads(line) for line in f]
    assert [(e["iteration"], e["env_steps"]) for e in entries] == [(1, 16), (2, 32), (3, 48)]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    code, stdout, stderr = _run("--verify_record", root, "--num_processes", 2, tmpdir=scratch)
    assert code == 0, stderr[-3000:]
    assert stdout.splitlines()[:3] == [f"iteration {i}: match" for i in (1, 2, 3)]
    assert [n for n in os.listdir(scratch) if n.startswith("alf-")] == []  # temporary dirs gone
