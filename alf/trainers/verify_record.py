"""``alf.bin.train --verify_record ROOT_DIR``: does a re-run act as the recorded run did?

The run in ``ROOT_DIR`` recorded the hash of every iteration's unroll
(``root_dir/train/unroll_hashes.jsonl``, ``alf.trainers.unroll_record``). A verification
rebuilds the experiment from its record (``config_files/run.json``: the conf files,
``--conf_param`` / ``--gin_param`` values and seed, as ``--from_record`` does), trains
its first ``N`` iterations into another root_dir (a temporary one, deleted after) with
the budget as recorded (so schedules and checkpoint times are the same), and compares
each iteration's hash with the recorded one. The layout given on the verification's
command line (``--num_processes``, remote samplers in a ``--conf_param``) may differ from
the original's: the hashes do not depend on it. Nothing in ``ROOT_DIR`` is written.

This module reads the record and compares; ``alf.bin.train`` runs the training.
"""

from __future__ import annotations

import os

from alf.trainers.unroll_record import HASHES_FILE, read_hashes

#: iterations verified when ``--verify_iterations`` is not given (fewer if fewer recorded)
DEFAULT_ITERATIONS = 5


def recorded_hashes(root_dir: str, num_iterations: int | None) -> list[dict]:
    """The recorded lines of iterations ``1..N`` of the run in ``root_dir``.

    Args:
        root_dir: the recorded run's root_dir.
        num_iterations: ``N``; None: ``min(recorded, DEFAULT_ITERATIONS)``.
    Raises:
        ValueError: one line: no such run, no hashes recorded, lines that do not count
            1, 2, 3, ..., or ``N`` below 1 or above the iterations recorded.
    """
    root_dir = os.path.abspath(os.path.expanduser(root_dir))
    if not os.path.isdir(root_dir):
        raise ValueError(f"--verify_record: {root_dir} is not a directory")
    path = os.path.join(root_dir, HASHES_FILE)
    try:
        entries = read_hashes(path)
    except FileNotFoundError:
        raise ValueError(
            f"--verify_record: {path} does not exist (a run with "
            "TrainerConfig.record_unroll_hashes=False, or no iteration done)"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"--verify_record: cannot read {path}: {e}") from e
    for expected, entry in enumerate(entries, start=1):
        if entry["iteration"] != expected:
            raise ValueError(
                f"--verify_record: {path} has iteration {entry['iteration']} where "
                f"{expected} is expected"
            )
    if not entries:
        raise ValueError(f"--verify_record: {path} records no iteration")
    if num_iterations is None:
        num_iterations = min(len(entries), DEFAULT_ITERATIONS)
    if not 1 <= num_iterations <= len(entries):
        raise ValueError(
            f"--verify_iterations={num_iterations} must be between 1 and the "
            f"{len(entries)} iterations recorded in {path}"
        )
    return entries[:num_iterations]


def compare(recorded: list[dict], root_dir: str, out=print) -> str | None:
    """Compare the ``recorded`` lines with those of the re-run in ``root_dir``, calling
    ``out`` with one line per iteration: ``iteration 3: match``,
    ``iteration 3: MISMATCH recorded <hash> got <hash>``, or ``iteration 3: not reached``
    (the re-run stopped before it, e.g. by SIGTERM). When the two were made by different
    numbers of learner ranks, whose parameters differ in the last bits (the gradients are
    summed in another order), the trajectories (time steps and actions) must match, and
    a difference in the policy's outputs alone is reported as
    ``iteration 3: trajectory match (...)``.

    Returns:
        None when all match, else one line saying why not, naming the first iteration
        that differs (or was not reached).
    """
    path = os.path.join(root_dir, HASHES_FILE)
    got = {e["iteration"]: e for e in read_hashes(path)} if os.path.exists(path) else {}
    verdict = None
    for entry in recorded:
        iteration, expected = entry["iteration"], entry["unroll_sha256"]
        mine = got.get(iteration)
        if mine is None:
            out(f"iteration {iteration}: not reached")
            verdict = verdict or f"the re-run stopped before iteration {iteration}"
        elif mine["unroll_sha256"] == expected:
            out(f"iteration {iteration}: match")
        elif _trajectory_suffices(entry, mine):
            out(
                f"iteration {iteration}: trajectory match (the policy's outputs differ: "
                f"{entry.get('learner_ranks', 1)} learner rank(s) recorded, "
                f"{mine.get('learner_ranks', 1)} now)"
            )
        else:
            out(f"iteration {iteration}: MISMATCH recorded {expected} got {mine['unroll_sha256']}")
            verdict = verdict or f"iteration {iteration} is the first that differs from the record"
    return verdict


def _trajectory_suffices(recorded: dict, mine: dict) -> bool:
    """Different numbers of learner ranks, and the same time steps and actions."""
    ranks = recorded.get("learner_ranks", 1), mine.get("learner_ranks", 1)
    trajectories = recorded.get("trajectory_sha256"), mine.get("trajectory_sha256")
    return ranks[0] != ranks[1] and trajectories[0] is not None and len(set(trajectories)) == 1


def checked_work_dir(path: str) -> str:
    """``--root_dir`` given with ``--verify_record``: where the re-run trains (kept); it
    must not hold anything yet (a run there would be resumed, not re-run).

    Raises:
        ValueError: ``path`` exists and is not an empty directory.
    """
    path = os.path.abspath(os.path.expanduser(path))
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise ValueError(
            f"--verify_record trains into --root_dir {path}, which must be new or empty"
        )
    return path
