"""Tests of alf.pbt.workspace: round trips, pruning and history, every kind of bad peer file
skipped with one warning, no unpickling, concurrent lineage appends, best checkpoints."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import multiprocessing
import os
import random

import pytest
import torch

from alf.pbt.files import WorkspaceWriteError, append_line
from alf.pbt.rule import EXPLOIT, decide
from alf.pbt.workspace import FORMAT_VERSION, MemberEntry, Workspace, entry_from_json

HPARAMS = {"Adam.lr": 3.0e-4, "PPOLoss.gamma": 0.99, "T.mini_batch_size": 64, "N.act": "relu"}


def _state(seed: float) -> dict:
    generator = torch.Generator().manual_seed(int(seed))
    return {
        "algorithm": {"w": torch.randn(4, 3, generator=generator), "b": torch.zeros(3)},
        "env_steps": int(seed),
        "meta": {"name": "x", "values": [1, 2.5, None]},
    }


def _publish(ws: Workspace, idx: int, env_steps: int, objective: float, hparams=None):
    return ws.publish(
        idx, env_steps, env_steps // 100, objective, hparams or HPARAMS, _state(env_steps)
    )


def _assert_states_equal(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            _assert_states_equal(a[key], b[key])
        elif torch.is_tensor(a[key]):
            assert torch.equal(a[key], b[key])
        else:
            assert a[key] == b[key]


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_publish_then_read_gives_identical_values_and_tensors(tmp_path):
    ws = Workspace(str(tmp_path / "ws"))
    written = _publish(ws, 3, 1200, 17.25)
    member_dir = tmp_path / "ws" / "003" / "pbt"
    assert sorted(os.listdir(member_dir)) == ["ckpt-1200.pt", "history.jsonl", "member.json"]
    on_disk = json.loads((member_dir / "member.json").read_text())
    assert on_disk["format"] == FORMAT_VERSION and on_disk["checkpoint"] == "ckpt-1200.pt"
    assert (
        on_disk["sha256"] == hashlib.sha256((member_dir / "ckpt-1200.pt").read_bytes()).hexdigest()
    )
    read = ws.newest_entry(3)
    assert read == written
    assert (read.policy_idx, read.env_steps, read.iteration, read.objective) == (3, 1200, 12, 17.25)
    assert read.hyperparameters == HPARAMS
    assert [type(v) for v in read.hyperparameters.values()] == [float, float, int, str]
    _assert_states_equal(ws.load_checkpoint(read), _state(1200))
    assert ws.members() == [3]
    assert ws.history(3) == [written]


def test_non_finite_objective_is_written_as_null_and_read_as_nan(tmp_path):
    ws = Workspace(str(tmp_path))
    _publish(ws, 0, 100, math.nan)
    assert json.loads((tmp_path / "000" / "pbt" / "member.json").read_text())["objective"] is None
    assert math.isnan(ws.newest_entry(0).objective)


def test_last_k_checkpoints_are_kept_and_history_finds_the_newest_entry_not_ahead(tmp_path, caplog):
    ws = Workspace(str(tmp_path), keep_checkpoints=3)
    for steps in (100, 200, 300, 400, 500):
        _publish(ws, 1, steps, steps / 10)
    assert ws.checkpoint_steps(1) == [300, 400, 500]
    assert [e.env_steps for e in ws.history(1)] == [100, 200, 300, 400, 500]
    assert ws.newest_entry(1).env_steps == 500
    assert ws.newest_entry(1, max_env_steps=450).env_steps == 400
    entry = ws.newest_entry(1, max_env_steps=300)
    assert (entry.env_steps, entry.objective) == (300, 30.0)
    _assert_states_equal(ws.load_checkpoint(entry), _state(300))
    assert ws.newest_entry(1, max_env_steps=99) is None  # nothing old enough: no warning
    assert _warnings(caplog) == []
    # an entry whose checkpoint was pruned is skipped with one warning
    assert ws.newest_entry(1, max_env_steps=250) is None
    assert len(_warnings(caplog)) == 1 and "ckpt-200.pt: missing" in _warnings(caplog)[0]
    # temporary files a killed writer left are removed by the member's next publish
    stale = os.path.join(ws.pbt_dir(1), ".tmp-abc123")
    open(stale, "wb").close()
    # republishing older steps never prunes the checkpoint just written
    _publish(ws, 1, 150, 1.0)
    assert ws.checkpoint_steps(1) == [150, 400, 500]
    assert not [n for n in os.listdir(ws.pbt_dir(1)) if n.startswith(".tmp")]


def test_population_feeds_the_rule(tmp_path):
    ws = Workspace(str(tmp_path))
    for idx, objective in enumerate((5.0, 1.0, 9.0)):
        _publish(ws, idx, 1000, objective, dict(HPARAMS, **{"Adam.lr": 0.001 * (idx + 1)}))
    _publish(ws, 2, 2000, 100.0)  # ahead of member 1: its 1000-step entry counts
    peers = ws.population(max_env_steps=1000, exclude=1)
    assert [(e.policy_idx, e.objective) for e in peers] == [(0, 5.0), (2, 9.0)]
    decision = decide(1, 1000, 1.0, [e.as_peer() for e in peers], rng=random.Random(0))
    assert decision.kind == EXPLOIT and decision.source_idx == 2
    source = decision.source.checkpoint
    assert isinstance(source, MemberEntry) and decision.source.hyperparameters["Adam.lr"] == 0.003
    _assert_states_equal(ws.load_checkpoint(source), _state(1000))


def _rewrite_json(ws: Workspace, idx: int, **changes):
    path = os.path.join(ws.pbt_dir(idx), "member.json")
    with open(path) as f:
        data = json.load(f)
    data.update(changes)
    with open(path, "w") as f:
        json.dump(data, f)


def _truncate_json(ws, idx):
    path = os.path.join(ws.pbt_dir(idx), "member.json")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])


def _flip_checkpoint_byte(ws, idx):
    path = os.path.join(ws.pbt_dir(idx), "ckpt-1000.pt")
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF
    with open(path, "wb") as f:
        f.write(bytes(data))


def _truncate_checkpoint(ws, idx):
    path = os.path.join(ws.pbt_dir(idx), "ckpt-1000.pt")
    os.truncate(path, os.path.getsize(path) // 2)


def _symlink_outside(ws, idx):
    path = os.path.join(ws.pbt_dir(idx), "ckpt-1000.pt")
    outside = os.path.join(os.path.dirname(ws.root), "outside.pt")
    os.replace(path, outside)  # the same bytes, so the sha256 matches
    os.symlink(outside, path)


CORRUPTIONS = {
    "truncated json": (_truncate_json, "member.json: not valid JSON"),
    "NaN in json": (lambda ws, i: _rewrite_json(ws, i, objective=math.nan), "NaN is not valid"),
    "missing json": (
        lambda ws, i: os.remove(os.path.join(ws.pbt_dir(i), "member.json")),
        "member.json: missing",
    ),
    "flipped byte": (_flip_checkpoint_byte, "ckpt-1000.pt: sha256"),
    "truncated checkpoint": (_truncate_checkpoint, "ckpt-1000.pt: sha256"),
    "wrong sha": (lambda ws, i: _rewrite_json(ws, i, sha256="0" * 64), "is not the 0000"),
    "parent path": (
        lambda ws, i: _rewrite_json(ws, i, checkpoint="../../000/pbt/ckpt-1000.pt"),
        "is not a plain file name",
    ),
    "absolute path": (
        lambda ws, i: _rewrite_json(ws, i, checkpoint=os.path.join(ws.pbt_dir(0), "ckpt-1000.pt")),
        "is not a plain file name",
    ),
    "symlink escape": (_symlink_outside, "outside the workspace"),
    "missing checkpoint": (
        lambda ws, i: os.remove(os.path.join(ws.pbt_dir(i), "ckpt-1000.pt")),
        "ckpt-1000.pt: missing",
    ),
    "other member's json": (
        lambda ws, i: _rewrite_json(ws, i, policy_idx=0),
        "policy_idx 0 does not match its folder 002",
    ),
    "other format": (lambda ws, i: _rewrite_json(ws, i, format=99), "format 99 is not 1"),
    "mistyped env steps": (lambda ws, i: _rewrite_json(ws, i, env_steps="1000"), "env_steps must"),
    "unknown field": (lambda ws, i: _rewrite_json(ws, i, extra=1), "unknown fields ['extra']"),
    "non-scalar hyperparameter": (
        lambda ws, i: _rewrite_json(ws, i, hyperparameters={"Adam.lr": [1]}),
        "hyperparameter 'Adam.lr'",
    ),
    "inconsistent name": (
        lambda ws, i: _rewrite_json(ws, i, checkpoint="ckpt-900.pt"),
        "does not match env_steps 1000",
    ),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_bad_peer_is_skipped_with_one_warning(tmp_path, caplog, corruption):
    ws = Workspace(str(tmp_path / "ws"))
    for idx in range(3):
        _publish(ws, idx, 1000, float(idx))
    damage, message = CORRUPTIONS[corruption]
    damage(ws, 2)
    entries = ws.population(max_env_steps=1000)
    assert [e.policy_idx for e in entries] == [0, 1]
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "skipping member 002" in warnings[0] and message in warnings[0], warnings[0]


def test_a_checkpoint_changed_after_its_description_was_read_is_not_loaded(tmp_path, caplog):
    ws = Workspace(str(tmp_path))
    entry = _publish(ws, 0, 1000, 1.0)
    _flip_checkpoint_byte(ws, 0)
    assert ws.load_checkpoint(entry) is None
    assert len(_warnings(caplog)) == 1 and "sha256" in _warnings(caplog)[0]
    os.remove(os.path.join(ws.pbt_dir(0), "ckpt-1000.pt"))  # pruned meanwhile
    assert ws.load_checkpoint(entry) is None
    assert "ckpt-1000.pt: missing" in _warnings(caplog)[1]


class _Payload:
    """Unpickling this object calls ``open(marker, "w")``: creates the marker file."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_pickled_payload_is_refused_and_never_runs(tmp_path, caplog):
    marker = tmp_path / "payload-ran"
    ws = Workspace(str(tmp_path / "ws"))
    # a writer refuses it: nothing is written, nothing runs
    with pytest.raises(ValueError, match="cannot load with weights_only=True"):
        ws.publish(0, 1000, 1, 1.0, HPARAMS, {"w": torch.ones(2), "evil": _Payload(str(marker))})
    assert not marker.exists() and ws.members() == []
    # a malicious peer writes it by hand, with a matching sha256 and description
    os.makedirs(ws.pbt_dir(1))
    checkpoint = os.path.join(ws.pbt_dir(1), "ckpt-1000.pt")
    torch.save({"w": torch.ones(2), "evil": _Payload(str(marker))}, checkpoint)
    with open(checkpoint, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    entry = MemberEntry(1, 1000, 1, 99.0, {}, "ckpt-1000.pt", digest, "now")
    with open(os.path.join(ws.pbt_dir(1), "member.json"), "w") as f:
        json.dump(entry.to_json(), f)
    read = ws.newest_entry(1)
    assert read == entry  # its files are consistent ...
    assert ws.load_checkpoint(read) is None  # ... but it is not loaded
    assert len(_warnings(caplog)) == 1 and "cannot be loaded safely" in _warnings(caplog)[0]
    assert not marker.exists()
    # the payload is real: an unsafe load would have run it
    torch.load(checkpoint, weights_only=False)
    assert marker.exists()


def test_entry_from_json_checks_and_round_trips():
    entry = MemberEntry(4, 10, 0, 1.5, {"a.b": True}, "ckpt-10.pt", "a" * 64, "t")
    assert entry_from_json(json.loads(json.dumps(entry.to_json())), 4) == entry
    with pytest.raises(ValueError, match="does not match its folder 005"):
        entry_from_json(entry.to_json(), 5)


def test_publish_rejects_bad_arguments(tmp_path):
    ws = Workspace(str(tmp_path))
    with pytest.raises(ValueError, match="hyperparameter 'Adam.lr'"):
        ws.publish(0, 1, 0, 1.0, {"Adam.lr": math.inf}, _state(1))
    with pytest.raises(ValueError, match="env_steps must be an int >= 0"):
        ws.publish(0, -1, 0, 1.0, {}, _state(1))
    with pytest.raises(ValueError, match="the state must be a dict"):
        ws.publish(0, 1, 0, 1.0, {}, [torch.ones(1)])
    with pytest.raises(ValueError, match="keep_checkpoints must be an int >= 1"):
        Workspace(str(tmp_path), keep_checkpoints=0)
    assert ws.members() == []


def test_lineage_round_trip_and_malformed_lines(tmp_path, caplog):
    ws = Workspace(str(tmp_path))
    old = {"Adam.lr": 1e-3, "PPOLoss.gamma": 0.99}
    new = {"Adam.lr": 1.2e-3, "PPOLoss.gamma": 0.99}
    record = ws.append_lineage(
        3, 5000, "exploit", source=1, old=old, new=new, gap=2.5, std=math.nan
    )
    assert record["changes"] == {"Adam.lr": [1e-3, 1.2e-3]} and record["std"] is None
    ws.append_lineage(4, 5000, "continue")
    with open(ws.lineage_path, "ab") as f:
        f.write(b"not json\n")
        f.write(b'{"member": "3", "env_steps": 1, "kind": "continue", "time": "t"}\n')
        f.write(b"[1, 2]\n")
        f.write(b'{"member": 5, "env_steps": 1, "kind": "exp')  # cut short
    records = ws.read_lineage()
    assert [(r["member"], r["kind"], r["source"]) for r in records] == [
        (3, "exploit", 1),
        (4, "continue", None),
    ]
    assert records[0] == record
    warnings = _warnings(caplog)
    assert len(warnings) == 4, warnings
    assert "lineage.jsonl line 6 is incomplete" in warnings[0]
    assert "line 3 skipped: not valid JSON" in warnings[1]
    assert "line 4 skipped: member must be int, got '3'" in warnings[2]
    assert "line 5 skipped: not a JSON object" in warnings[3]
    with pytest.raises(ValueError, match="kind must be one of"):
        ws.append_lineage(3, 1, "explore")
    with pytest.raises(ValueError, match="extra field 'changes' would replace a field"):
        ws.append_lineage(3, 1, "continue", changes={})


def _append_many(root: str, worker: int, count: int) -> None:
    ws = Workspace(root)
    padding = "x" * (1500 + 500 * worker)  # long lines, of different lengths
    for i in range(count):
        ws.append_lineage(worker, i, "mutate_only", old={"a.b": i}, new={"a.b": i + 1}, pad=padding)


def test_concurrent_appends_give_whole_lines(tmp_path, caplog):
    root = str(tmp_path)
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(root, w, 500)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    with open(os.path.join(root, "lineage.jsonl"), "rb") as f:
        lines = f.read().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 4 * 500 + 1
    records = Workspace(root).read_lineage()
    assert _warnings(caplog) == []
    for worker in range(4):
        mine = [r for r in records if r["member"] == worker]
        assert [r["env_steps"] for r in mine] == list(range(500))
        assert all(len(r["pad"]) == 1500 + 500 * worker for r in mine)


def test_append_line_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError):
        append_line(str(tmp_path / "x.jsonl"), {"a": math.nan})
    with pytest.raises(WorkspaceWriteError, match="cannot append to .*missing/x.jsonl"):
        append_line(str(tmp_path / "missing" / "x.jsonl"), {"a": 1})


def test_best_checkpoint_is_replaced_only_when_better(tmp_path):
    ws = Workspace(str(tmp_path))
    assert ws.best(3) is None
    first = ws.record_best(3, -2.5, 4, _state(4))
    assert os.path.basename(first) == "best-obj-2.5-it4-p003.pt"
    assert ws.record_best(3, -2.5, 5, _state(5)) is None  # not better
    assert ws.record_best(3, -7.0, 6, _state(6)) is None
    assert ws.record_best(3, math.nan, 7, _state(7)) is None
    best = ws.best(3)
    assert (best.path, best.objective, best.iteration, best.policy_idx) == (first, -2.5, 4, 3)
    second = ws.record_best(3, 1.25e-3, 9, _state(9))
    assert os.listdir(ws.best_dir(3)) == ["best-obj0.00125-it9-p003.pt"]
    assert ws.best(3).path == second and ws.best(3).objective == 1.25e-3
    _assert_states_equal(torch.load(second, weights_only=True), _state(9))
    large = ws.record_best(3, 1.5e20, 10, _state(10))
    assert os.path.basename(large) == "best-obj1.5e+20-it10-p003.pt"
    assert ws.best(3).objective == 1.5e20
