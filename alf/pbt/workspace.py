"""The folder a PBT population shares: ``Workspace``.

Layout (``NNN`` is the policy index, zero-padded to 3 digits)::

    WORKSPACE/
      lineage.jsonl          every member's decisions, one JSON object a line
      NNN/
        pbt/
          ckpt-<env_steps>.pt    the member's last ``keep_checkpoints`` checkpoints
          member.json            the description of its newest checkpoint
          history.jsonl          every description it published, one a line
        best/
          best-obj<objective>-it<iteration>-p<NNN>.pt   its best checkpoint so far
                                                        (at training iteration <iteration>)

A description (``MemberEntry``, format ``FORMAT_VERSION``) holds ``format``,
``policy_idx``, ``env_steps``, ``iteration`` (the training iterations done, as in the
trainer's ``ckpt-<iteration>.pt``), ``objective`` (a number, or null when it is not
finite: read back as NaN), ``hyperparameters`` (``{"Name.arg": JSON scalar}``),
``checkpoint`` (the file name ``ckpt-<env_steps>.pt``, relative to the ``pbt/`` folder
holding the description), the checkpoint's ``sha256`` and ``time`` (UTC, ISO 8601).

**Writing** (only the member itself writes its folder): the checkpoint first, then
``member.json``, each to a temporary file in the same folder, fsync'ed and renamed,
so a reader never sees half a file; then the description is appended to
``history.jsonl``, and checkpoints beyond the newest ``keep_checkpoints`` are
deleted. A state that ``torch.load(weights_only=True)`` could not read back is
refused before anything is written.

**Reading** trusts nothing: each description is checked (types, format version,
``policy_idx`` against its folder, a plain ``ckpt-<env_steps>.pt`` name, a file that
exists inside the workspace after resolving symlinks, its sha256). A peer whose
files are missing, truncated or inconsistent is skipped with one warning naming the
file and why, never an exception. Checkpoints are loaded from the bytes whose
sha256 was checked, with ``torch.load(weights_only=True)``: nothing is unpickled, so
a pickled payload is refused and never runs. A checkpoint may be pruned by its
writer between reading a description and loading it; ``load_checkpoint`` then
returns None with a warning.

**Appending** (``lineage.jsonl``, ``history.jsonl``): each record is one line written
by a single ``write`` on a file opened with ``O_APPEND``, so records of concurrent
writers do not interleave on a local file system (NFS does not promise this).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import logging
import math
import os
import re
from collections.abc import Mapping
from typing import Any

from alf.pbt.files import (
    InvalidFile,
    WorkspaceWriteError,
    append_line,
    atomic_write,
    is_int,
    is_real,
    load_state,
    parse_json,
    read_lines,
    scalar_problem,
    serialize_state,
)
from alf.pbt.rule import CONTINUE, EXPLOIT, MUTATE_ONLY, PeerEntry

__all__ = ["BestCheckpoint", "MemberEntry", "Workspace", "WorkspaceWriteError", "entry_from_json"]

FORMAT_VERSION = 1
PBT_DIR = "pbt"
BEST_DIR = "best"
MEMBER_JSON = "member.json"
HISTORY = "history.jsonl"
LINEAGE = "lineage.jsonl"
DECISION_KINDS = (CONTINUE, MUTATE_ONLY, EXPLOIT)

_CKPT_RE = re.compile(r"^ckpt-(\d+)\.pt$")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")
_MEMBER_RE = re.compile(r"^\d{3,}$")
_NUMBER = r"-?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
_BEST_RE = re.compile(
    rf"^best-obj(?P<objective>{_NUMBER})-it(?P<iteration>\d+)-p(?P<policy>\d+)\.pt$"
)
_FIELDS = (
    "format",
    "policy_idx",
    "env_steps",
    "iteration",
    "objective",
    "hyperparameters",
    "checkpoint",
    "sha256",
    "time",
)
_LINEAGE_FIELDS = {"time": str, "member": int, "env_steps": int, "kind": str}


@dataclasses.dataclass(frozen=True)
class MemberEntry:
    """One published description of a member (see the module doc for the fields)."""

    policy_idx: int
    env_steps: int
    iteration: int
    objective: float
    hyperparameters: dict
    checkpoint: str
    sha256: str
    time: str = ""

    def to_json(self) -> dict:
        """The description as written to ``member.json`` (a non-finite objective as null)."""
        return {
            "format": FORMAT_VERSION,
            "policy_idx": self.policy_idx,
            "env_steps": self.env_steps,
            "iteration": self.iteration,
            "objective": self.objective if math.isfinite(self.objective) else None,
            "hyperparameters": dict(self.hyperparameters),
            "checkpoint": self.checkpoint,
            "sha256": self.sha256,
            "time": self.time,
        }

    def as_peer(self) -> PeerEntry:
        """This description as an ``alf.pbt.rule.PeerEntry`` whose checkpoint is this entry."""
        return PeerEntry(
            self.policy_idx, self.env_steps, self.objective, dict(self.hyperparameters), self
        )


@dataclasses.dataclass(frozen=True)
class BestCheckpoint:
    """A member's best checkpoint: its ``path``, ``objective``, ``iteration`` and ``policy_idx``."""

    path: str
    objective: float
    iteration: int
    policy_idx: int


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def _check_hyperparameters(hyperparameters) -> None:
    if not isinstance(hyperparameters, dict):
        raise InvalidFile(f"hyperparameters must be an object, got {hyperparameters!r}")
    for name, value in hyperparameters.items():
        if not isinstance(name, str):
            raise InvalidFile(f"hyperparameter name {name!r} is not a string")
        problem = scalar_problem(value)
        if problem:
            raise InvalidFile(f"hyperparameter {name!r}: {problem}")


def _check_checkpoint_name(name, env_steps: int) -> None:
    if not isinstance(name, str):
        raise InvalidFile(f"checkpoint must be a file name, got {name!r}")
    if os.path.isabs(name) or "/" in name or "\\" in name or name in ("", ".", ".."):
        raise InvalidFile(f"checkpoint {name!r} is not a plain file name")
    match = _CKPT_RE.match(name)
    if not match:
        raise InvalidFile(f"checkpoint {name!r} is not named ckpt-<env_steps>.pt")
    if int(match.group(1)) != env_steps:
        raise InvalidFile(f"checkpoint {name!r} does not match env_steps {env_steps}")


def entry_from_json(data: Any, policy_idx: int) -> MemberEntry:
    """Validate a parsed description of member ``policy_idx``; return it as a ``MemberEntry``.

    Raises:
        ValueError: what is wrong (a missing, unknown or mistyped field, another format
            version, another policy index, a checkpoint name that is not plain).
    """
    try:
        return _entry_from_json(data, policy_idx)
    except InvalidFile as e:
        raise ValueError(str(e)) from None


def _entry_from_json(data: Any, policy_idx: int) -> MemberEntry:
    if not isinstance(data, dict):
        raise InvalidFile("does not hold a JSON object")
    missing = [key for key in _FIELDS if key not in data]
    unknown = sorted(key for key in data if key not in _FIELDS)
    if missing or unknown:
        raise InvalidFile(f"missing fields {missing}, unknown fields {unknown}")
    if not is_int(data["format"]) or data["format"] != FORMAT_VERSION:
        raise InvalidFile(f"format {data['format']!r} is not {FORMAT_VERSION}")
    for key in ("policy_idx", "env_steps", "iteration"):
        if not is_int(data[key]) or data[key] < 0:
            raise InvalidFile(f"{key} must be an int >= 0, got {data[key]!r}")
    if data["policy_idx"] != policy_idx:
        raise InvalidFile(
            f"policy_idx {data['policy_idx']} does not match its folder {policy_idx:03d}"
        )
    objective = data["objective"]
    if objective is not None and not is_real(objective):
        raise InvalidFile(f"objective must be a number or null, got {objective!r}")
    _check_hyperparameters(data["hyperparameters"])
    _check_checkpoint_name(data["checkpoint"], data["env_steps"])
    if not isinstance(data["sha256"], str) or not _SHA_RE.match(data["sha256"]):
        raise InvalidFile(f"sha256 must be 64 lowercase hex digits, got {data['sha256']!r}")
    if not isinstance(data["time"], str):
        raise InvalidFile(f"time must be a string, got {data['time']!r}")
    return MemberEntry(
        policy_idx=policy_idx,
        env_steps=data["env_steps"],
        iteration=data["iteration"],
        objective=math.nan if objective is None else float(objective),
        hyperparameters=dict(data["hyperparameters"]),
        checkpoint=data["checkpoint"],
        sha256=data["sha256"],
        time=data["time"],
    )


class Workspace:
    """The shared folder of a PBT population (see the module doc).

    Args:
        root: the workspace folder (created on first write).
        keep_checkpoints: how many of a member's newest checkpoints are kept (>= 1).
    """

    def __init__(self, root: str, keep_checkpoints: int = 3):
        if not is_int(keep_checkpoints) or keep_checkpoints < 1:
            raise ValueError(
                f"Workspace.keep_checkpoints must be an int >= 1, got {keep_checkpoints!r}"
            )
        self._root = os.path.abspath(root)
        self._keep = keep_checkpoints

    @property
    def root(self) -> str:
        """The absolute path of the workspace folder."""
        return self._root

    def member_dir(self, policy_idx: int) -> str:
        """``WORKSPACE/NNN``."""
        if not is_int(policy_idx) or policy_idx < 0:
            raise ValueError(f"policy_idx must be an int >= 0, got {policy_idx!r}")
        return os.path.join(self._root, f"{policy_idx:03d}")

    def pbt_dir(self, policy_idx: int) -> str:
        """``WORKSPACE/NNN/pbt``: the member's checkpoints and descriptions."""
        return os.path.join(self.member_dir(policy_idx), PBT_DIR)

    def best_dir(self, policy_idx: int) -> str:
        """``WORKSPACE/NNN/best``: the member's best checkpoint."""
        return os.path.join(self.member_dir(policy_idx), BEST_DIR)

    def members(self) -> list[int]:
        """Policy indices of the member folders present, ascending."""
        if not os.path.isdir(self._root):
            return []
        return sorted(
            int(name)
            for name in os.listdir(self._root)
            if _MEMBER_RE.match(name)
            and name == f"{int(name):03d}"
            and os.path.isdir(os.path.join(self._root, name))
        )

    def checkpoint_steps(self, policy_idx: int) -> list[int]:
        """Env steps of member ``policy_idx``'s ``ckpt-<env_steps>.pt`` files, ascending."""
        directory = self.pbt_dir(policy_idx)
        if not os.path.isdir(directory):
            return []
        found = (_CKPT_RE.match(name) for name in os.listdir(directory))
        return sorted(int(m.group(1)) for m in found if m)

    def publish(
        self,
        policy_idx: int,
        env_steps: int,
        iteration: int,
        objective: float,
        hyperparameters: Mapping[str, Any],
        state: dict,
    ) -> MemberEntry:
        """Write member ``policy_idx``'s checkpoint ``state`` and its description.

        The checkpoint ``ckpt-<env_steps>.pt`` is written first, then ``member.json``
        (each atomically), then the description is appended to ``history.jsonl`` and
        checkpoints beyond the newest ``keep_checkpoints`` are deleted (never the one
        just written).

        Args:
            policy_idx: the member's index.
            env_steps: its environment steps (names the checkpoint).
            iteration: its training iterations done.
            objective: its objective (a non-finite one is recorded as null: unknown).
            hyperparameters: its values by ``Name.arg`` (JSON scalars, finite floats).
            state: a dict of tensors and plain values that ``torch.load(weights_only=True)``
                can read.

        Returns:
            the description written.
        Raises:
            ValueError: a bad argument, or a state peers could not load safely; nothing
                was written.
            WorkspaceWriteError: a file could not be written (the previous ones are kept).
        """
        self._check_publish_args(policy_idx, env_steps, iteration, objective, hyperparameters)
        directory = self.pbt_dir(policy_idx)
        name = f"ckpt-{env_steps}.pt"
        data = serialize_state(state, os.path.join(directory, name))
        os.makedirs(directory, exist_ok=True)
        entry = MemberEntry(
            policy_idx=policy_idx,
            env_steps=env_steps,
            iteration=iteration,
            objective=float(objective),
            hyperparameters=dict(hyperparameters),
            checkpoint=name,
            sha256=hashlib.sha256(data).hexdigest(),
            time=_now(),
        )
        atomic_write(os.path.join(directory, name), data)
        text = json.dumps(entry.to_json(), indent=2, allow_nan=False) + "\n"
        atomic_write(os.path.join(directory, MEMBER_JSON), text.encode("utf-8"))
        append_line(os.path.join(directory, HISTORY), entry.to_json())
        self._prune(policy_idx, keep=env_steps)
        return entry

    def _check_publish_args(self, policy_idx, env_steps, iteration, objective, hyperparameters):
        self.member_dir(policy_idx)
        for key, value in (("env_steps", env_steps), ("iteration", iteration)):
            if not is_int(value) or value < 0:
                raise ValueError(f"{key} must be an int >= 0, got {value!r}")
        if not is_real(objective):
            raise ValueError(f"objective must be a number, got {objective!r}")
        try:
            _check_hyperparameters(dict(hyperparameters))
        except InvalidFile as e:
            raise ValueError(str(e)) from None

    def _prune(self, policy_idx: int, keep: int) -> None:
        """Delete all but the newest ``keep_checkpoints`` checkpoints (``keep`` is always
        kept) and temporary files a killed writer left (only this member writes here)."""
        directory = self.pbt_dir(policy_idx)
        steps = [s for s in self.checkpoint_steps(policy_idx) if s != keep]
        names = [f"ckpt-{s}.pt" for s in steps[: max(0, len(steps) - (self._keep - 1))]]
        names += [n for n in os.listdir(directory) if n.startswith(".tmp-")]
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(directory, name))

    def _skip(self, policy_idx: int, path: str, why: str) -> None:
        logging.warning("PBT workspace: skipping member %03d: %s: %s", policy_idx, path, why)

    def _read_member_json(self, policy_idx: int) -> MemberEntry:
        path = os.path.join(self.pbt_dir(policy_idx), MEMBER_JSON)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise InvalidFile("missing") from None
        except OSError as e:
            raise InvalidFile(f"unreadable ({e.strerror})") from None
        return _entry_from_json(parse_json(data), policy_idx)

    def history(self, policy_idx: int) -> list[MemberEntry]:
        """Every valid description member ``policy_idx`` appended to ``history.jsonl``, in
        order (checkpoints not checked); a malformed line is skipped with a warning."""
        path = os.path.join(self.pbt_dir(policy_idx), HISTORY)
        if not os.path.exists(path):
            return []
        entries = []
        for number, line in read_lines(path):
            try:
                entries.append(_entry_from_json(parse_json(line), policy_idx))
            except InvalidFile as e:
                logging.warning("PBT workspace: %s line %d skipped: %s", path, number, e)
        return entries

    def _checkpoint_bytes(self, entry: MemberEntry) -> tuple[str, bytes]:
        """The path and content of ``entry``'s checkpoint, once checked (``InvalidFile`` if not)."""
        _check_checkpoint_name(entry.checkpoint, entry.env_steps)
        path = os.path.join(self.pbt_dir(entry.policy_idx), entry.checkpoint)
        real = os.path.realpath(path)
        if not real.startswith(os.path.realpath(self._root) + os.sep):
            raise InvalidFile(f"resolves to {real}, outside the workspace")
        if not os.path.isfile(real):
            raise InvalidFile("missing" if not os.path.lexists(path) else "not a regular file")
        try:
            with open(real, "rb") as f:
                data = f.read()
        except OSError as e:
            raise InvalidFile(f"unreadable ({e.strerror})") from None
        digest = hashlib.sha256(data).hexdigest()
        if digest != entry.sha256:
            raise InvalidFile(f"sha256 {digest} is not the {entry.sha256} its description gives")
        return path, data

    def newest_entry(
        self, policy_idx: int, max_env_steps: int | None = None, verify: bool = True
    ) -> MemberEntry | None:
        """Member ``policy_idx``'s newest description with env steps <= ``max_env_steps``
        (its newest when None), with its checkpoint checked when ``verify``.

        Returns:
            the entry, or None (with one warning naming the file and why) when the
            member's ``member.json`` or that entry's checkpoint is missing, truncated or
            inconsistent; None without a warning when no entry is old enough.
        """
        try:
            entry = self._read_member_json(policy_idx)
        except InvalidFile as e:
            self._skip(policy_idx, os.path.join(self.pbt_dir(policy_idx), MEMBER_JSON), str(e))
            return None
        if max_env_steps is not None and entry.env_steps > max_env_steps:
            older = [e for e in self.history(policy_idx) if e.env_steps <= max_env_steps]
            if not older:
                logging.info(
                    "PBT workspace: member %03d has no entry with env_steps <= %d",
                    policy_idx,
                    max_env_steps,
                )
                return None
            entry = max(reversed(older), key=lambda e: e.env_steps)
        if verify:
            try:
                self._checkpoint_bytes(entry)
            except InvalidFile as e:
                path = os.path.join(self.pbt_dir(policy_idx), str(entry.checkpoint))
                self._skip(policy_idx, path, str(e))
                return None
        return entry

    def population(
        self, max_env_steps: int | None = None, exclude: int | None = None, verify: bool = True
    ) -> list[MemberEntry]:
        """``newest_entry`` of every member folder present (but ``exclude``), skipping those
        with nothing usable; ``[e.as_peer() for e in ...]`` is what ``alf.pbt.rule.decide``
        takes."""
        entries = []
        for policy_idx in self.members():
            if policy_idx != exclude:
                entry = self.newest_entry(policy_idx, max_env_steps, verify)
                if entry is not None:
                    entries.append(entry)
        return entries

    def load_checkpoint(self, entry: MemberEntry, map_location="cpu") -> dict | None:
        """The state in ``entry``'s checkpoint, loaded with ``torch.load(weights_only=True)``
        from the very bytes whose sha256 was checked.

        Returns:
            the state dict, or None with one warning when the file is missing (pruned),
            escapes the workspace, does not match its sha256, or cannot be loaded safely.
        """
        path = os.path.join(self.pbt_dir(entry.policy_idx), str(entry.checkpoint))
        try:
            path, data = self._checkpoint_bytes(entry)
            state = load_state(data, map_location)
        except InvalidFile as e:
            self._skip(entry.policy_idx, path, str(e))
            return None
        return state

    @property
    def lineage_path(self) -> str:
        """``WORKSPACE/lineage.jsonl``."""
        return os.path.join(self._root, LINEAGE)

    def append_lineage(
        self,
        member: int,
        env_steps: int,
        kind: str,
        source: int | None = None,
        old: Mapping[str, Any] | None = None,
        new: Mapping[str, Any] | None = None,
        **extra,
    ) -> dict:
        """Append one decision to ``lineage.jsonl`` (one line, a single ``O_APPEND`` write).

        Args:
            member: the deciding member's policy index.
            env_steps: its env steps.
            kind: ``continue``, ``mutate_only`` or ``exploit``.
            source: the member copied (``exploit``), else None.
            old: the hyperparameters before.
            new: the hyperparameters after; ``changes`` records ``[old, new]`` of each
                name whose value differs.
            extra: more JSON fields (objective, gap, ...); a non-finite float becomes null.

        Returns:
            the record written.
        """
        if kind not in DECISION_KINDS:
            raise ValueError(f"kind must be one of {DECISION_KINDS}, got {kind!r}")
        old, new = dict(old or {}), dict(new or {})
        changes = {
            name: [old.get(name), new.get(name)]
            for name in sorted(set(old) | set(new))
            if name not in old or name not in new or old[name] != new[name]
        }
        record = {
            "time": _now(),
            "member": member,
            "env_steps": env_steps,
            "kind": kind,
            "source": source,
            "changes": changes,
        }
        for key, value in extra.items():
            if key in record:
                raise ValueError(f"append_lineage: extra field {key!r} would replace a field")
            finite = not isinstance(value, float) or math.isfinite(value)
            record[key] = value if finite else None
        os.makedirs(self._root, exist_ok=True)
        append_line(self.lineage_path, record)
        return record

    def read_lineage(self) -> list[dict]:
        """The records of ``lineage.jsonl`` in order; a malformed line is skipped with a warning."""
        path = self.lineage_path
        if not os.path.exists(path):
            return []
        records = []
        for number, line in read_lines(path):
            try:
                record = parse_json(line)
                if not isinstance(record, dict):
                    raise InvalidFile("not a JSON object")
                for key, kind in _LINEAGE_FIELDS.items():
                    value = record.get(key)
                    if not isinstance(value, kind) or isinstance(value, bool):
                        raise InvalidFile(f"{key} must be {kind.__name__}, got {value!r}")
            except InvalidFile as e:
                logging.warning("PBT workspace: %s line %d skipped: %s", path, number, e)
                continue
            records.append(record)
        return records

    def best(self, policy_idx: int) -> BestCheckpoint | None:
        """Member ``policy_idx``'s recorded best checkpoint (None when there is none)."""
        directory = self.best_dir(policy_idx)
        if not os.path.isdir(directory):
            return None
        found = []
        for name in os.listdir(directory):
            match = _BEST_RE.match(name)
            if match and int(match.group("policy")) == policy_idx:
                objective = float(match.group("objective"))
                iteration = int(match.group("iteration"))
                path = os.path.join(directory, name)
                found.append(BestCheckpoint(path, objective, iteration, policy_idx))
        return max(found, key=lambda b: (b.objective, b.iteration), default=None)

    def record_best(
        self, policy_idx: int, objective: float, iteration: int, state: dict
    ) -> str | None:
        """Write ``state`` as member ``policy_idx``'s best checkpoint if ``objective`` is
        finite and higher than the recorded best's.

        The file ``best/best-obj<objective>-it<iteration>-p<NNN>.pt`` is written atomically,
        then the previous best files are deleted.

        Returns:
            the new file's path, or None when the recorded best is at least as good.
        Raises:
            ValueError: a bad argument or a state peers could not load safely.
            WorkspaceWriteError: the file could not be written (the previous best is kept).
        """
        if not is_real(objective) or not is_int(iteration) or iteration < 0:
            raise ValueError(f"bad objective {objective!r} or iteration {iteration!r}")
        objective = float(objective)
        current = self.best(policy_idx)
        if not math.isfinite(objective) or (current is not None and objective <= current.objective):
            return None
        directory = self.best_dir(policy_idx)
        name = f"best-obj{objective!r}-it{iteration}-p{policy_idx:03d}.pt"
        path = os.path.join(directory, name)
        data = serialize_state(state, path)
        os.makedirs(directory, exist_ok=True)
        atomic_write(path, data)
        for other in os.listdir(directory):
            if other != name and _BEST_RE.match(other):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(directory, other))
        return path
