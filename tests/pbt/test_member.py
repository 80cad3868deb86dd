"""The PBT member inside ``PolicyTrainer`` (``alf.pbt.member``), in this process, on the tiny
PBT conf (a check every 128 env steps = 4 iterations) and hand-made workspaces: an exploit
copies a peer's weights bit-identically and changes at least one hyperparameter, which the
optimizer then uses; a resumed member keeps its values; a pickled payload in a peer
checkpoint never runs; a truncated peer description is skipped with a log line; a
population of one trains exactly as a run without PBT; the same seeds give the same
lineage; the bad member of a short CartPole population is exploited."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from alf.pbt.member import HYPERPARAMETERS_FILE
from alf.pbt.workspace import Workspace, WorkspaceWriteError
from alf.tuning.pbt.status import population_rows
from tests.bin.test_train_play import event_files
from tests.pbt.conftest import REPO, make_member, make_trainer, tensors

PEER_VALUES = {"Adam.lr": 5e-4, "PPOLoss.entropy_regularization": 0.02}


def publish_peer(workspace, env_steps=128, objective=1000.0, seed=7) -> dict:
    """Member 1 of ``workspace``: a freshly built algorithm (seed ``seed``) published at
    ``env_steps`` with ``objective``; returns its tensors."""
    peer = make_member(workspace, 1, seed=seed)
    state = {"algorithm": peer.algorithm.state_dict()}
    peer.close()
    Workspace(str(workspace)).publish(1, env_steps, 1, objective, PEER_VALUES, state)
    return tensors(state["algorithm"])


def lineage(workspace) -> list[dict]:
    return Workspace(str(workspace)).read_lineage()


def optimizer_lr(trainer) -> tuple[float, float]:
    """The lr of the first optimizer: its spec's and its torch param groups'."""
    spec, optimizer, _ = trainer.algorithm.optimizers()[0]
    return float(spec.lr_scheduler()), optimizer.param_groups[0]["lr"]


def test_an_exploit_copies_the_peer_weights_bit_identically_and_mutates(tmp_path):
    peer = publish_peer(tmp_path)
    trainer = make_member(tmp_path, 0, "TrainerConfig.num_iterations=4")
    before = tensors(trainer.algorithm.state_dict())
    assert any(not torch.equal(before[k], peer[k]) for k in peer)
    trainer.train()  # the check at 128 env steps ends the last iteration
    after = tensors(trainer.algorithm.state_dict())
    assert after.keys() == peer.keys()
    assert all(torch.equal(after[k], peer[k]) for k in peer)

    (record,) = lineage(tmp_path)
    assert (record["member"], record["env_steps"], record["kind"]) == (0, 128, "exploit")
    assert record["source"] == 1 and record["source_objective"] == 1000.0
    values = trainer._pbt.values
    changed = [name for name in PEER_VALUES if values[name] != PEER_VALUES[name]]
    assert changed, values
    for name in changed:  # within the change factors of the peer's value
        ratio = values[name] / PEER_VALUES[name]
        assert 1.1 <= max(ratio, 1 / ratio) <= 1.5 + 1e-12
    assert record["changes"]["Adam.lr"] == [1e-3, values["Adam.lr"]]
    assert optimizer_lr(trainer) == (values["Adam.lr"], values["Adam.lr"])
    loss = trainer.algorithm._loss
    assert loss._entropy_regularization == values["PPOLoss.entropy_regularization"]
    # --status shows the values in force, not those published before the exploit
    published = Workspace(str(tmp_path)).newest_entry(0, verify=False).hyperparameters
    assert published["Adam.lr"] == 1e-3
    assert population_rows(str(tmp_path))[0]["hyperparameters"] == values

    # the checkpoint written at the end holds the PBT state; a resumed member applies it
    resumed = make_member(tmp_path, 0, "TrainerConfig.num_iterations=8")
    assert resumed._pbt.values == values
    assert optimizer_lr(resumed)[0] == values["Adam.lr"]
    assert resumed.algorithm._loss._entropy_regularization == loss._entropy_regularization
    resumed.train()  # at 256 env steps it copies the peer again (still far better)
    final = resumed._pbt.values
    assert final != values and optimizer_lr(resumed) == (final["Adam.lr"], final["Adam.lr"])
    with open(tmp_path / "000" / HYPERPARAMETERS_FILE) as f:
        record = json.load(f)
    assert record["values"] == final
    assert [(h["kind"], h["env_steps"], h["source"]) for h in record["history"]] == [
        ("start", 0, None),
        ("exploit", 128, 1),
        ("exploit", 256, 1),
    ]
    # tensorboard: each value over env steps (at each start, then at every check)
    # (one event file per run, read in the order they were written: tensorboard orders the
    # files of one directory by name, where the same second's runs sort by host and pid)
    lr = []
    for path in event_files(tmp_path / "000" / "train"):
        acc = EventAccumulator(path, size_guidance={"scalars": 0})
        acc.Reload()
        lr += [(e.step, e.value) for e in acc.Scalars("pbt/Adam.lr")]
    assert [step for step, _ in lr] == [0, 128, 128, 256]
    expected = [1e-3, values["Adam.lr"], values["Adam.lr"], final["Adam.lr"]]
    assert [value for _, value in lr] == pytest.approx(expected)
    assert "pbt/PPOLoss.entropy_regularization" in acc.Tags()["scalars"]


class Payload:
    """Unpickling this object would create the folder ``path``."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.makedirs, (self.path,))


def write_peer_by_hand(workspace, data: bytes, description: bytes | None = None) -> None:
    """Member 1's files written directly: checkpoint ``data`` and its description."""
    directory = os.path.join(str(workspace), "001", "pbt")
    os.makedirs(directory)
    with open(os.path.join(directory, "ckpt-128.pt"), "wb") as f:
        f.write(data)
    entry = {
        "format": 1,
        "policy_idx": 1,
        "env_steps": 128,
        "iteration": 1,
        "objective": 1000.0,
        "hyperparameters": PEER_VALUES,
        "checkpoint": "ckpt-128.pt",
        "sha256": hashlib.sha256(data).hexdigest(),
        "time": "",
    }
    text = description if description is not None else json.dumps(entry).encode()
    with open(os.path.join(directory, "member.json"), "wb") as f:
        f.write(text)


def test_a_pickled_payload_in_a_peer_checkpoint_never_runs(tmp_path):
    marker = tmp_path / "payload-ran"
    path = tmp_path / "payload.pt"
    torch.save({"algorithm": {"weight": Payload(str(marker))}}, path)
    write_peer_by_hand(tmp_path, path.read_bytes())
    trainer = make_member(tmp_path, 0, "TrainerConfig.num_iterations=4")
    before = tensors(trainer.algorithm.state_dict())
    trainer.train()
    assert not marker.exists()
    (record,) = lineage(tmp_path)
    assert record["kind"] == "continue" and record["changes"] == {}
    assert "not copying member 1: its checkpoint cannot be read" in record["message"]
    assert trainer._pbt.values == {"Adam.lr": 1e-3, "PPOLoss.entropy_regularization": 0.01}
    trained = tensors(trainer.algorithm.state_dict())
    assert any(not torch.equal(trained[k], before[k]) for k in before)  # it trained on


def test_a_truncated_peer_description_is_skipped_with_a_log_line(tmp_path, caplog):
    text = json.dumps({"format": 1, "policy_idx": 1, "env_steps": 128}).encode()
    write_peer_by_hand(tmp_path, b"x", description=text[: len(text) // 2])
    trainer = make_member(tmp_path, 0, "TrainerConfig.num_iterations=4")
    with caplog.at_level(logging.WARNING):
        trainer.train()
    skipped = [r.getMessage() for r in caplog.records if "skipping member 001" in r.getMessage()]
    assert skipped and "member.json: not valid JSON" in skipped[0]
    (record,) = lineage(tmp_path)
    assert record["kind"] == "continue" and "no comparable peer" in record["message"]


def test_a_population_of_one_trains_exactly_as_without_pbt(tmp_path):
    plain = make_trainer(tmp_path / "plain", "TrainerConfig.random_seed=1")  # no workspace
    plain.train()
    member = make_member(tmp_path / "ws", 0, num_policies=1)  # seed 1, empty workspace
    member.train()
    a, b = tensors(plain.algorithm.state_dict()), tensors(member.algorithm.state_dict())
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    records = lineage(tmp_path / "ws")
    assert [(r["env_steps"], r["kind"]) for r in records] == [
        (s, "continue") for s in (128, 256, 384, 512)
    ]
    assert all(r["message"] == "member 0: no comparable peer" for r in records)
    objectives = [r["objective"] for r in records]
    assert all(isinstance(o, float) and math.isfinite(o) and o > 5 for o in objectives)
    workspace = Workspace(str(tmp_path / "ws"))
    assert workspace.checkpoint_steps(0) == [256, 384, 512]
    assert workspace.best(0).objective == max(objectives)
    # descriptions and the best file carry the training iteration (32 env steps each)
    published = [(e.env_steps, e.iteration) for e in workspace.history(0)]
    assert published == [(128, 4), (256, 8), (384, 12), (512, 16)]
    best_steps = records[objectives.index(max(objectives))]["env_steps"]
    assert os.path.basename(workspace.best(0).path).endswith(f"-it{best_steps // 32}-p000.pt")


def _sequential_population(workspace) -> list[dict]:
    """Members 0 then 1 (lr 1e-7) of the tiny PBT conf, one after the other."""
    make_member(workspace, 0).train()
    make_member(workspace, 1, "PBTConfig.initial_values={'Adam.lr': 1e-7}").train()
    return [{k: v for k, v in r.items() if k != "time"} for r in lineage(workspace)]


def test_the_same_seeds_and_schedule_give_the_same_lineage(tmp_path):
    first = _sequential_population(tmp_path / "a")
    second = _sequential_population(tmp_path / "b")
    assert first == second
    kinds = [(r["member"], r["kind"]) for r in first]
    assert kinds[:4] == [(0, "continue")] * 4
    assert any(kind != "continue" for member, kind in kinds if member == 1)


def test_the_bad_member_of_a_short_cartpole_population_is_exploited(tmp_path):
    """The fast twin of tests/pbt/test_learning.py: PPO CartPole (8 envs, 12,288 env steps a
    member), member 1 at lr 1e-7; member 1 copies member 0 at its first decision."""
    params = [
        "TrainerConfig.num_env_steps=12288",
        "TrainerConfig.num_iterations=0",
        "TrainerConfig.evaluate=False",
        "TrainerConfig.summary_interval=1000",
        "PBTConfig.interval_steps=4096",
        "PBTConfig.initial_delay=4096",
        "PBTConfig.start_after=0",
    ]
    conf = os.path.join(REPO, "alf", "examples", "pbt_ppo_cart_pole_conf.py")
    for idx, extra in ((0, []), (1, ["PBTConfig.initial_values={'Adam.lr': 1e-7}"])):
        workspace_params = [
            f"PBTConfig.workspace={str(tmp_path)!r}",
            f"PBTConfig.policy_idx={idx}",
            "PBTConfig.num_policies=2",
            f"TrainerConfig.random_seed={idx + 1}",
        ]
        root = tmp_path / f"{idx:03d}"
        make_trainer(root, *extra, *workspace_params, *params, conf=conf).train()
    records = [r for r in lineage(tmp_path) if r["member"] == 1]
    exploit = next(r for r in records if r["kind"] == "exploit")
    assert exploit["source"] == 0 and exploit["env_steps"] == 4096
    assert exploit["source_objective"] > 2 * exploit["objective"]
    assert exploit["changes"]["Adam.lr"][0] == 1e-7
    assert exploit["changes"]["Adam.lr"][1] > 1e-4


def test_a_workspace_that_cannot_be_written_skips_the_check_with_a_log_line(
    tmp_path, monkeypatch, caplog
):
    def full_disk(self, *args, **kwargs):
        raise WorkspaceWriteError(f"cannot write {self.root}/000/pbt/ckpt-128.pt: No space")

    monkeypatch.setattr(Workspace, "publish", full_disk)
    trainer = make_member(tmp_path, 0, "TrainerConfig.num_iterations=8")
    with caplog.at_level(logging.ERROR):
        trainer.train()
    assert trainer.env_steps == 256 and trainer.iteration == 8
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == [
        f"PBT member 0: the check at {s} env steps failed and is skipped: cannot write "
        f"{tmp_path}/000/pbt/ckpt-128.pt: No space"
        for s in (128, 256)
    ]
