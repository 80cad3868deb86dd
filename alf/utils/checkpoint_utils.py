"""Atomic, safe checkpoints: ``Checkpointer``.

A checkpoint is one file ``ckpt-<step>.pt`` holding a dict of tensors and plain
Python values (numbers, strings, lists, dicts). It is written to a temporary
file in the same directory, fsync'ed, then renamed, so a crash never leaves a
half-written ``ckpt-*.pt``. Loading uses ``torch.load(weights_only=True)``:
nothing is unpickled beyond tensors and plain containers, so a file carrying a
pickled object (``__reduce__`` payload) is refused and the payload never runs.

The newest ``keep`` checkpoints are kept, plus ``ckpt-best.pt`` (the state at the
best evaluation). If the newest checkpoint is unreadable, ``load`` falls
back to the previous one with a warning; if none is readable it raises: it
never silently starts from scratch. A state whose ``"algorithm"`` entry holds a NaN or
inf is never written (``alf.utils.finite``): a diverged run cannot replace or prune the
good checkpoints.

**One algorithm per root_dir.** A training checkpoint names what trained it
(``run_identity``: the algorithm's fully qualified class and the conf file's name), as
does the run record (``algorithm_class`` in ``config_files/run.json``).
``check_same_algorithm`` refuses to resume a root_dir's run with another algorithm (or
with a learner that keeps no replay buffer when the checkpoint holds one); a checkpoint
and a record written before these fields existed are "unknown" and only checked by
shapes (``check_compatible``) and the replay buffer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile

import torch

from alf.utils import common, run_record
from alf.utils.finite import NonFiniteError, first_non_finite

_CKPT_RE = re.compile(r"^ckpt-(\d+)\.pt$")
BEST_NAME = "ckpt-best.pt"
#: the checkpoint (and run record) key of the fully qualified class of the algorithm
ALGORITHM_CLASS = "algorithm_class"
#: the checkpoint key of the name of the conf file that built the run
CONF_FILE = "conf_file"


class CheckpointError(RuntimeError):
    """No usable checkpoint could be loaded (the message names the files)."""


class Checkpointer:
    """Saves and loads training state in ``ckpt_dir``.

    Args:
        ckpt_dir: directory of the checkpoint files (created on first save).
        keep: number of newest step checkpoints kept on disk (the best one is
            kept in addition).
    """

    def __init__(self, ckpt_dir: str, keep: int = 3):
        if keep < 1:
            raise ValueError(f"Checkpointer.keep must be >= 1, got {keep}")
        self._dir = ckpt_dir
        self._keep = keep

    @property
    def directory(self) -> str:
        return self._dir

    def steps(self) -> list[int]:
        """Steps of the ``ckpt-<step>.pt`` files present, ascending."""
        if not os.path.isdir(self._dir):
            return []
        found = (_CKPT_RE.match(name) for name in os.listdir(self._dir))
        return sorted(int(m.group(1)) for m in found if m)

    def path(self, step: int) -> str:
        return os.path.join(self._dir, f"ckpt-{step}.pt")

    def save(self, step: int, state: dict) -> str:
        """Atomically write ``state`` as ``ckpt-<step>.pt``; prune old ones; return the path.

        Raises:
            NonFiniteError: ``state["algorithm"]`` holds a NaN or inf; nothing was written
                or pruned.
        """
        path = self.path(step)
        _refuse_non_finite(state, path)
        os.makedirs(self._dir, exist_ok=True)
        _atomic_torch_save(state, path)
        self._prune()
        return path

    def save_best(self, state: dict, score: float) -> str:
        """Atomically write ``state`` as ``ckpt-best.pt`` (never used for resuming); refused
        like ``save`` when its weights are not finite."""
        path = os.path.join(self._dir, BEST_NAME)
        _refuse_non_finite(state, path)
        os.makedirs(self._dir, exist_ok=True)
        _atomic_torch_save(dict(state, best_score=float(score)), path)
        logging.info("Best checkpoint so far (score %.4g) written to %s", score, path)
        return path

    def _prune(self) -> None:
        for step in self.steps()[: -self._keep]:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path(step))

    def load(self, step: int | None = None, map_location="cpu") -> dict | None:
        """Load checkpoint ``step`` (the newest readable one when None).

        Returns:
            the state dict, or None when the directory holds no checkpoint.
        Raises:
            CheckpointError: ``step`` is missing or unreadable, or every
                checkpoint present is unreadable.
        """
        if step is not None:
            path = self.path(step)
            if not os.path.exists(path):
                raise CheckpointError(
                    f"Checkpoint {path} does not exist (available steps: {self.steps()})"
                )
            return safe_load(path, map_location)
        newest = self.load_newest(map_location)
        return None if newest is None else newest[1]

    def load_newest(self, map_location="cpu") -> tuple[str, dict] | None:
        """``(path, state)`` of the newest readable step checkpoint (None when there is none).

        An unreadable checkpoint is skipped with a warning (the previous one is tried).

        Raises:
            CheckpointError: every checkpoint present is unreadable.
        """
        steps = self.steps()
        if not steps:
            return None
        errors = []
        for candidate in reversed(steps):
            path = self.path(candidate)
            try:
                state = safe_load(path, map_location)
            except CheckpointError as e:
                logging.warning("%s; falling back to the previous checkpoint", e)
                errors.append(str(e))
                continue
            return path, state
        raise CheckpointError(
            f"None of the checkpoints in {self._dir} can be loaded: " + "; ".join(errors)
        )

    def load_best(self, map_location="cpu") -> dict:
        path = os.path.join(self._dir, BEST_NAME)
        if not os.path.exists(path):
            raise CheckpointError(f"No best checkpoint {path}")
        return safe_load(path, map_location)


def check_compatible(saved: dict, current: dict, where: str, show: int = 3) -> None:
    """Raise ``CheckpointError`` unless the tensors of the state dict ``saved`` (from a
    checkpoint) have the names and shapes of those of ``current`` (the model built now).

    Only top-level tensors count (parameters and buffers; not an optimizer's nested state,
    empty before its first step). The message lists up to ``show`` of each kind of
    mismatch, with both shapes.
    """
    old, new = (
        {k: list(v.shape) for k, v in d.items() if torch.is_tensor(v)} for d in (saved, current)
    )
    problems = []
    differ = [n for n in new if n in old and old[n] != new[n]]
    if differ:
        shown = [f"{n} (checkpoint {old[n]}, built {new[n]})" for n in differ[:show]]
        problems.append(f"{len(differ)} shapes differ: " + ", ".join(shown))
    for what, names in (("missing from", new.keys() - old), ("only in", old.keys() - new)):
        if names:
            shown = ", ".join(sorted(names)[:show])
            problems.append(f"{len(names)} {what} the checkpoint: {shown}")
    if problems:
        raise CheckpointError(
            f"the checkpoint in {where} does not fit the algorithm the conf builds ("
            + "; ".join(problems)
            + "): resume with the conf it was trained with, or train into another root_dir"
        )


def algorithm_class(algorithm) -> str:
    """The fully qualified class name of ``algorithm`` (e.g.
    ``alf.algorithms.ppo_algorithm.PPOAlgorithm``; for an ``Agent`` conf, the RL algorithm
    it built)."""
    cls = type(algorithm)
    return f"{cls.__module__}.{cls.__qualname__}"


def run_identity(algorithm) -> dict:
    """``{ALGORITHM_CLASS: ..., CONF_FILE: ...}``: what a checkpoint says built the run (the
    conf file's name is None when no conf was parsed, e.g. a trainer built in Python)."""
    parsed = common.parsed_conf_args()
    conf_file = os.path.basename(parsed[0]) if parsed else None
    return {ALGORITHM_CLASS: algorithm_class(algorithm), CONF_FILE: conf_file}


def check_resumable(
    state: dict | None, algorithm, root_dir: str, ckpt_dir: str, version: int
) -> None:
    """Raise ``CheckpointError`` unless ``algorithm`` (built now) may resume the run in
    ``root_dir`` from ``state``, its newest checkpoint (loaded from ``ckpt_dir``; None: it
    has none): the same algorithm (``check_same_algorithm``), checkpoint ``version`` and
    the tensors' names and shapes (``check_compatible``)."""
    check_same_algorithm(root_dir, state, algorithm)
    if state is None:
        return
    if state.get("version") != version:
        raise CheckpointError(
            f"Checkpoint in {ckpt_dir} has version {state.get('version')}, expected {version}"
        )
    check_compatible(state["algorithm"], algorithm.state_dict(), ckpt_dir)


def check_same_algorithm(root_dir: str, state: dict | None, algorithm) -> None:
    """Raise ``CheckpointError`` unless ``algorithm`` (built now) may resume the run in
    ``root_dir``, whose newest checkpoint is ``state`` (None: it has none).

    The run's algorithm class is the one ``state`` names, else the one its run record
    names (a record without a checkpoint still claims the root_dir); neither naming one
    (older runs) leaves it unknown. A known class other than ``algorithm``'s is refused, and
    so is a checkpoint holding a replay buffer when ``algorithm``'s learner keeps none,
    unless the class is known and the buffer empty (PPO's, from before PPO trained without
    one: it was emptied after every iteration).
    """
    built = run_identity(algorithm)
    held = _held_identity(root_dir, state)
    what = _name(built[ALGORITHM_CLASS], held.get(ALGORITHM_CLASS), built[CONF_FILE])
    fresh = f"train into a new --root_dir, or remove {root_dir} to start over"
    if held.get(ALGORITHM_CLASS) not in (None, built[ALGORITHM_CLASS]):
        holds = _name(held[ALGORITHM_CLASS], built[ALGORITHM_CLASS], held.get(CONF_FILE))
        raise CheckpointError(
            f"root_dir {root_dir} holds a run of {holds}; this conf builds {what}: {fresh}"
        )
    learner = getattr(algorithm, "learner", None)
    if "replay_buffer" in (state or {}) and not getattr(learner, "keeps_replay_buffer", False):
        if held.get(ALGORITHM_CLASS) is not None and not _holds_steps(state["replay_buffer"]):
            return  # the same class kept an emptied buffer then (PPO did): nothing is lost
        raise CheckpointError(
            f"root_dir {root_dir} holds a run whose checkpoint keeps a replay buffer; "
            f"this conf builds {what}, which keeps none: {fresh}"
        )


def _holds_steps(buffer_state: dict) -> bool:
    """Whether a checkpointed ``ReplayBuffer.state_dict()`` holds any stored step."""
    try:
        return bool((buffer_state["current_pos"] > buffer_state["clear_pos"]).any())
    except (KeyError, TypeError, RuntimeError):
        return True


def _held_identity(root_dir: str, state: dict | None) -> dict:
    """The ``run_identity`` of the run in ``root_dir``: its checkpoint's, else its record's
    (with the record's conf file); ``{}`` when neither names the algorithm."""
    if state is not None and isinstance(state.get(ALGORITHM_CLASS), str):
        return {ALGORITHM_CLASS: state[ALGORITHM_CLASS], CONF_FILE: state.get(CONF_FILE)}
    record = run_record.read_record(root_dir) or {}
    if isinstance(record.get(ALGORITHM_CLASS), str):
        return {ALGORITHM_CLASS: record[ALGORITHM_CLASS], CONF_FILE: record.get("conf_file")}
    return {}


def _name(cls: str, other: str | None, conf_file) -> str:
    """``cls``'s short name (the full one when ``other`` has the same short name), then
    ``(conf_file)`` when known."""
    short = cls.rsplit(".", 1)[-1]
    if other is not None and other != cls and other.rsplit(".", 1)[-1] == short:
        short = cls
    return f"{short} ({conf_file})" if isinstance(conf_file, str) else short


def _refuse_non_finite(state: dict, path: str) -> None:
    """Raise ``NonFiniteError`` when the algorithm's state in ``state`` is not finite."""
    culprit = first_non_finite(state.get("algorithm", {}), prefix="algorithm")
    if culprit is not None:
        directory = os.path.dirname(path)
        raise NonFiniteError(
            f"{culprit} is not finite: {os.path.basename(path)} was not written, and the "
            f"checkpoints already in {directory} are kept"
        )


class CheckpointWriteError(OSError):
    """A checkpoint could not be written (disk full, read-only, ...); nothing was replaced."""


def _atomic_torch_save(state: dict, path: str) -> None:
    directory = os.path.dirname(path) or "."
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-ckpt-")
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None and os.path.exists(tmp):
            os.remove(tmp)
        cause = _os_error_in(e)
        if cause is None:
            raise
        error = CheckpointWriteError(
            f"cannot write checkpoint {path}: {cause.strerror}; the checkpoints already in "
            f"{directory} are kept"
        )
        error.errno = cause.errno
        raise error from e
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _os_error_in(error: BaseException) -> OSError | None:
    """The ``OSError`` with an errno in ``error``'s chain (torch wraps a full disk in a
    ``RuntimeError``), or None."""
    while error is not None:
        if isinstance(error, OSError) and error.errno is not None:
            return error
        error = error.__cause__ or error.__context__
    return None


def safe_load(path: str, map_location="cpu") -> dict:
    """Load the checkpoint file ``path`` with ``torch.load(weights_only=True)``.

    Raises:
        CheckpointError: the file cannot be loaded safely or does not hold a dict.
    """
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # torch raises UnpicklingError, RuntimeError, EOFError, ...
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"Checkpoint {path} cannot be loaded safely: {reason}") from e
    if not isinstance(state, dict):
        raise CheckpointError(f"Checkpoint {path} does not hold a dict")
    return state
