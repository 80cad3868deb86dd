"""``alf.bin.train --verify_record ROOT_DIR`` as a user runs it.

A 3-iteration tiny PPO CartPole run records its unroll hashes. Re-running it from its
record matches them (one line per iteration, exit 0) and leaves the run's files
byte-identical and no temporary directory behind; ``--verify_iterations`` and a kept
``--root_dir`` re-run fewer; a record whose conf was edited (a learning rate: the
first unroll comes before any update) fails with exit 1 naming iteration 2; bad input
is one error line and exit 2 (``tests/trainers/test_verify_record.py`` has more cases).
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.bin.test_train_play import REPO, TIMEOUT, TINY_CONF, one_error_line, tree_hashes

SHORT = [
    "--conf_param",
    "TrainerConfig.num_iterations=3",
    "--conf_param",
    "TrainerConfig.unroll_length=8",
]


def _run(*args, tmpdir=None):
    """``(returncode, stdout, stderr)`` of ``python -m alf.bin.train args`` (``tmpdir``: its
    TMPDIR)."""
    env = dict(os.environ)
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    proc = subprocess.run(
        [sys.executable, "-m", "alf.bin.train", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The recorded run's root_dir and its hashes."""
    root = tmp_path_factory.mktemp("verify") / "run"
    code, _, stderr = _run("--conf", TINY_CONF, "--root_dir", root, "--nostore_snapshot", *SHORT)
    assert code == 0, stderr[-3000:]
    with open(root / "train" / "unroll_hashes.jsonl") as f:
        hashes = [json.loads(line)["unroll_sha256"] for line in f]
    assert len(hashes) == 3
    return root, hashes


def test_a_rerun_matches_and_the_record_is_only_read(recorded, tmp_path):
    root, _ = recorded
    before = tree_hashes(root)
    code, stdout, stderr = _run("--verify_record", root, tmpdir=tmp_path)
    assert code == 0, stderr[-3000:]
    assert stdout.splitlines() == [
        "iteration 1: match",
        "iteration 2: match",
        "iteration 3: match",
        "alf.bin.train: the 3 iterations match the record",
    ]
    assert tree_hashes(root) == before
    assert [n for n in os.listdir(tmp_path) if n.startswith("alf-")] == []  # temporary dirs gone


def test_fewer_iterations_into_a_kept_root_dir(recorded, tmp_path):
    root, hashes = recorded
    code, stdout, stderr = _run(
        "--verify_record", root, "--verify_iterations", 2, "--root_dir", tmp_path / "rerun"
    )
    assert code == 0, stderr[-3000:]
    assert stdout.splitlines()[:2] == ["iteration 1: match", "iteration 2: match"]
    with open(tmp_path / "rerun" / "train" / "unroll_hashes.jsonl") as f:
        assert [json.loads(line)["unroll_sha256"] for line in f] == hashes[:2]


def test_an_edited_conf_fails_at_the_first_iteration_that_differs(recorded, tmp_path):
    root, hashes = recorded
    edited = tmp_path / "edited"
    shutil.copytree(root, edited)
    # the record rebuilds the run from the conf texts in run.json
    record_path = edited / "config_files" / "run.json"
    record = json.loads(record_path.read_text())
    conf = record["conf_files"]["tiny_ppo_conf.py"]
    assert "lr=1e-3" in conf
    record["conf_files"]["tiny_ppo_conf.py"] = conf.replace("lr=1e-3", "lr=3e-2")
    record_path.write_text(json.dumps(record))
    code, stdout, stderr = _run("--verify_record", edited)
    assert code == 1, stderr[-3000:]
    lines = stdout.splitlines()
    assert lines[0] == "iteration 1: match"
    assert lines[1].startswith(f"iteration 2: MISMATCH recorded {hashes[1]} got ")
    assert lines[1].split()[-1] != hashes[1] and len(lines[1].split()[-1]) == 64
    assert lines[-1] == "alf.bin.train: iteration 2 is the first that differs from the record"


@pytest.mark.parametrize(
    "case", ["no_hashes", "too_many", "with_conf", "busy_root_dir", "no_record", "no_record_flag"]
)
def test_bad_input_is_one_error_line_and_status_2(recorded, tmp_path, case):
    root, _ = recorded
    args = ["--verify_record", root]
    if case == "no_hashes":
        shutil.copytree(root / "config_files", tmp_path / "run" / "config_files")
        args[1] = tmp_path / "run"
    elif case == "too_many":
        args += ["--verify_iterations", 4]
    elif case == "with_conf":
        args += ["--conf", TINY_CONF]
    elif case == "no_record_flag":  # --verify_iterations alone would be silently ignored
        args = ["--conf", TINY_CONF, "--root_dir", tmp_path / "new", "--verify_iterations", 2]
    elif case == "busy_root_dir":
        (tmp_path / "busy").mkdir()
        (tmp_path / "busy" / "file").write_text("x")
        args += ["--root_dir", tmp_path / "busy"]
    else:  # hashes without the record to rebuild the run from
        os.makedirs(tmp_path / "run" / "train")
        shutil.copy(root / "train" / "unroll_hashes.jsonl", tmp_path / "run" / "train")
        args[1] = tmp_path / "run"
    code, stdout, stderr = _run(*args)
    assert code == 2, stderr[-3000:]
    one_error_line(stderr, "train")
    if case == "no_record_flag":
        assert "--verify_iterations" in stderr and not (tmp_path / "new").exists()
