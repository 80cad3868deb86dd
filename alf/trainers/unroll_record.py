"""The run's record of its unrolls: ``root_dir/train/unroll_hashes.jsonl``.

One JSON line per training iteration, written by rank 0 as the iteration completes::

    {"iteration": 3, "env_steps": 96, "unroll_sha256": "9f2c...",
     "trajectory_sha256": "51ab...", "learner_ranks": 1}

``iteration`` counts from 1 (iteration 1's unroll is acted before any update),
``env_steps`` is the run's total after it, ``unroll_sha256`` is
``alf.utils.unroll_hash.unroll_hash`` of the per-environment digests of the iteration's
``Unroll``, taken right after the unroll and before the learner trains on it,
``trajectory_sha256`` the same of its time steps and actions alone (the policy's outputs
left out: ``K`` learner ranks compute them from parameters that differ in the last bits),
and ``learner_ranks`` the number of data-parallel learner ranks that made it. With
several learner ranks every rank digests its own environments and rank 0 hashes all of
them in rank order (rank ``r`` steps the contiguous block ``[r B/K, (r+1) B/K)``), so the
hash is that of a single process stepping all ``B`` environments when the unrolls are
the same: the record says whether two runs of an experiment acted alike, whatever
their layout (``alf.bin.train --verify_record``, ``alf.trainers.verify_record``).

Each line is appended with one ``write`` on a file opened with ``O_APPEND``. The file
always describes the run in ``root_dir``: before training goes on from a checkpoint of
iteration ``k`` (``k = 0``: a fresh run), the lines after ``k`` (left by an interrupted
run) are dropped by writing the rest aside and renaming it over the file.
``TrainerConfig.record_unroll_hashes=False`` turns the record off (the lines after the
checkpoint are still dropped, so the file never holds another run's iterations).
"""

from __future__ import annotations

import json
import os
import tempfile

from alf.parallel import collectives
from alf.utils import unroll_hash
from alf.utils.checkpoint_utils import CheckpointWriteError

#: the record's path under ``root_dir``
HASHES_FILE = os.path.join("train", "unroll_hashes.jsonl")


def read_hashes(path: str) -> list[dict]:
    """The lines of an ``unroll_hashes.jsonl`` file, as dicts.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a line that is not a JSON object with an int ``iteration``, an int
            ``env_steps`` and a str ``unroll_sha256`` (naming the file and line).
    """
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path} line {number} is not JSON: {e}") from e
            if not (
                isinstance(entry, dict)
                and isinstance(entry.get("iteration"), int)
                and isinstance(entry.get("env_steps"), int)
                and isinstance(entry.get("unroll_sha256"), str)
            ):
                raise ValueError(
                    f"{path} line {number} lacks iteration, env_steps or unroll_sha256"
                )
            entries.append(entry)
    return entries


class UnrollHashRecord:
    """Records the hash of every training iteration's unroll of ``algorithm``.

    Args:
        root_dir: the run's root_dir (absolute).
        algorithm: the ``RLAlgorithm`` trained; its unroll observer is set to this.
        observe: whether to record (``TrainerConfig.record_unroll_hashes``); False: no
            observer, nothing appended, only ``continue_from`` drops stale lines.
    """

    def __init__(self, root_dir: str, algorithm, observe: bool = True):
        self.path = os.path.join(root_dir, HASHES_FILE)
        self._digests = None
        if observe:
            algorithm.set_unroll_observer(self._observe)

    def _observe(self, unroll) -> None:
        self._digests = unroll_hash.env_digest_pairs(unroll)

    def continue_from(self, iteration: int) -> None:
        """Drop the lines after ``iteration`` (the checkpoint training goes on from; 0 for
        a fresh run). Rank 0 only; the others do nothing."""
        self._digests = None
        if not collectives.is_main() or not os.path.exists(self.path):
            return
        with open(self.path, encoding="utf-8") as f:
            lines = f.readlines()
        kept = [line for line in lines if _iteration_of(line) <= iteration]
        if len(kept) == len(lines):
            return
        directory = os.path.dirname(self.path)
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-unroll-hashes-")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.writelines(kept)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            tmp = None
        except OSError as e:
            raise CheckpointWriteError(f"cannot rewrite {self.path}: {e.strerror or e}") from e
        finally:
            if tmp is not None and os.path.exists(tmp):
                os.remove(tmp)

    def commit(self, iteration: int, env_steps: int) -> None:
        """Record the unroll of the iteration just completed (every rank calls it; with
        several ranks the digests are gathered to rank 0, which writes)."""
        digests, self._digests = self._digests, None
        if digests is None:  # the algorithm does not unroll through train_iter
            return
        full, trajectory = digests
        if collectives.is_active():
            gathered = collectives.all_gather_objects(digests)
            full = [d for rank in gathered for d in rank[0]]
            trajectory = [d for rank in gathered for d in rank[1]]
        if not collectives.is_main():
            return
        line = {
            "iteration": int(iteration),
            "env_steps": int(env_steps),
            "unroll_sha256": unroll_hash.unroll_hash(full),
            "trajectory_sha256": unroll_hash.unroll_hash(trajectory),
            "learner_ranks": collectives.world_size(),
        }
        _append_line(self.path, json.dumps(line, separators=(", ", ": ")) + "\n")


def _iteration_of(line: str) -> float:
    """The iteration of a line (a line that cannot be read is dropped as if after all)."""
    try:
        return int(json.loads(line)["iteration"])
    except (ValueError, KeyError, TypeError):
        return float("inf")


def _append_line(path: str, line: str) -> None:
    data = line.encode("utf-8")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, data)
        finally:
            os.close(fd)
    except OSError as e:
        raise CheckpointWriteError(f"cannot append to {path}: {e.strerror or e}") from e
    if written != len(data):
        raise CheckpointWriteError(f"cannot append to {path}: {written} of {len(data)} bytes")
