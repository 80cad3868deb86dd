"""``alf.trainers.verify_record``: reading a run's recorded unroll hashes (which lines, how
many, bad input as one-line ``ValueError`` s) and comparing a re-run's with them."""

import json
import os

import pytest

from alf.trainers.unroll_record import HASHES_FILE
from alf.trainers.verify_record import checked_work_dir, compare, recorded_hashes


def _write(root_dir, iterations, hashes=None):
    path = os.path.join(root_dir, HASHES_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    hashes = hashes or [f"h{i}" for i in iterations]
    with open(path, "w") as f:
        for i, h in zip(iterations, hashes, strict=True):
            f.write(json.dumps({"iteration": i, "env_steps": 8 * i, "unroll_sha256": h}) + "\n")


def test_the_first_n_lines_by_default_at_most_five(tmp_path):
    _write(tmp_path, range(1, 8))
    assert [e["iteration"] for e in recorded_hashes(str(tmp_path), None)] == [1, 2, 3, 4, 5]
    assert [e["iteration"] for e in recorded_hashes(str(tmp_path), 7)] == list(range(1, 8))
    _write(tmp_path, [1, 2])
    assert [e["unroll_sha256"] for e in recorded_hashes(str(tmp_path), None)] == ["h1", "h2"]


@pytest.mark.parametrize(
    "lines, n, message",
    [
        (None, None, "does not exist"),
        ([], None, "records no iteration"),
        ([1, 2, 3], 4, "between 1 and the 3 iterations"),
        ([1, 2, 3], 0, "between 1 and the 3 iterations"),
        ([1, 3], None, "has iteration 3 where 2 is expected"),
        ("torn", None, "line 2 is not JSON"),
    ],
)
def test_bad_records_are_one_line_errors(tmp_path, lines, n, message):
    if lines == "torn":
        _write(tmp_path, [1])
        with open(os.path.join(tmp_path, HASHES_FILE), "a") as f:
            f.write('{"iteration": 2, "env')
    elif lines is not None:
        _write(tmp_path, lines)
    with pytest.raises(ValueError, match=message) as info:
        recorded_hashes(str(tmp_path), n)
    assert "\n" not in str(info.value)


def test_compare_prints_a_line_per_iteration_and_names_the_first_that_differs(tmp_path):
    recorded = [{"iteration": i, "env_steps": 8 * i, "unroll_sha256": f"h{i}"} for i in (1, 2, 3)]
    _write(tmp_path / "same", [1, 2, 3])
    out = []
    assert compare(recorded, str(tmp_path / "same"), out.append) is None
    assert out == ["iteration 1: match", "iteration 2: match", "iteration 3: match"]

    _write(tmp_path / "other", [1, 2, 3], ["h1", "x2", "x3"])
    out = []
    verdict = compare(recorded, str(tmp_path / "other"), out.append)
    assert verdict == "iteration 2 is the first that differs from the record"
    assert out[1:] == [
        "iteration 2: MISMATCH recorded h2 got x2",
        "iteration 3: MISMATCH recorded h3 got x3",
    ]

    _write(tmp_path / "stopped", [1])
    out = []
    verdict = compare(recorded, str(tmp_path / "stopped"), out.append)
    assert verdict == "the re-run stopped before iteration 2"
    assert out == ["iteration 1: match", "iteration 2: not reached", "iteration 3: not reached"]


def test_a_given_work_dir_must_be_new_or_empty(tmp_path):
    assert checked_work_dir(str(tmp_path / "new")) == str(tmp_path / "new")
    assert checked_work_dir(str(tmp_path)) == str(tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="must be new or empty"):
        checked_work_dir(str(tmp_path))


def test_another_number_of_ranks_needs_the_same_trajectories(tmp_path):
    def write(root, lines):
        path = os.path.join(root, HASHES_FILE)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            for i, (full, trajectory, ranks) in enumerate(lines, start=1):
                entry = dict(iteration=i, env_steps=8 * i, unroll_sha256=full)
                entry.update(trajectory_sha256=trajectory, learner_ranks=ranks)
                f.write(json.dumps(entry) + "\n")

    write(tmp_path / "record", [("a1", "t1", 1), ("a2", "t2", 1)])
    recorded = recorded_hashes(str(tmp_path / "record"), None)
    write(tmp_path / "two_ranks", [("a1", "t1", 2), ("b2", "t2", 2)])
    out = []
    assert compare(recorded, str(tmp_path / "two_ranks"), out.append) is None
    assert out[0] == "iteration 1: match" and out[1].startswith("iteration 2: trajectory match")
    write(tmp_path / "one_rank", [("a1", "t1", 1), ("b2", "t2", 1)])  # same layout: all bits
    assert "iteration 2" in compare(recorded, str(tmp_path / "one_rank"), [].append)
    write(tmp_path / "acted_otherwise", [("a1", "t1", 2), ("b2", "u2", 2)])
    assert "iteration 2" in compare(recorded, str(tmp_path / "acted_otherwise"), [].append)
