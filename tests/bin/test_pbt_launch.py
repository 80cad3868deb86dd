"""``python -m alf.bin.pbt_launch`` on the tiny PBT conf (a check every 128 env steps), as a
user runs it: a population of 3 where one member is SIGKILLed and restarted from its
checkpoint, then ``--status``; two members in turns on one slot; a stop signal forwarded
to the members; refused input."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import time

import pytest

from alf.pbt.workspace import Workspace
from alf.utils.run_record import PBT_HYPERPARAMETERS
from tests.bin.test_train_play import REPO, finish, one_error_line, run, start

TINY_PBT_CONF = os.path.join(REPO, "tests", "confs", "tiny_pbt_conf.py")
LAUNCH = "alf.bin.pbt_launch"


def launch(workspace, *args):
    return start(
        LAUNCH, "--conf", TINY_PBT_CONF, "--workspace", workspace, "--nostore_snapshot", *args
    )


def record(workspace) -> dict:
    with open(os.path.join(workspace, "pbt_launch.json")) as f:
        return json.load(f)


def wait_for(condition, timeout=90.0, what="a condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def running_with_checkpoint(workspace, idx, min_step):
    """The pid of member ``idx`` once it runs and has a trainer checkpoint >= ``min_step``."""
    try:
        entry = record(workspace)["members"][idx]
    except (OSError, ValueError):
        return None
    ckpt_dir = os.path.join(workspace, f"{idx:03d}", "train", "algorithm")
    steps = (
        [
            int(m.group(1))
            for m in map(re.compile(r"^ckpt-(\d+)\.pt$").match, os.listdir(ckpt_dir))
            if m
        ]
        if os.path.isdir(ckpt_dir)
        else []
    )
    if entry.get("status") == "running" and steps and max(steps) >= min_step:
        return entry["pid"]
    return None


def test_a_killed_member_is_restarted_and_continues_from_its_checkpoint(tmp_path):
    workspace = str(tmp_path / "ws")
    proc = launch(
        workspace,
        "--num_policies", 3,
        "--member_conf_param", "1:TrainerConfig.num_iterations=64",
        "--member_conf_param", "1:TrainerConfig.checkpoint_interval=8",
    )  # fmt: skip
    pid = wait_for(lambda: running_with_checkpoint(workspace, 1, 16), what="member 1")
    os.kill(pid, signal.SIGKILL)
    code, stdout, stderr = finish(proc)
    assert code == 0, stderr[-3000:]
    members = record(workspace)["members"]
    assert [m["status"] for m in members] == ["finished"] * 3
    assert [(m["attempts"], m.get("restarts", 0)) for m in members] == [(1, 0), (2, 1), (1, 0)]
    assert [m["exit_code"] for m in members] == [0, 0, 0]
    assert "Member 001 exited with status -9: restarting it from its checkpoint (1 of 3)" in stderr
    with open(os.path.join(workspace, "logs", "001.log")) as f:
        log = f.read()
    assert log.count("alf.bin.pbt_launch: ") == 2  # one header a start
    resumed = re.search(r"Resumed from iteration (\d+) \((\d+) env steps\)", log)
    assert (
        resumed
        and int(resumed.group(1)) >= 16
        and int(resumed.group(2)) == 32 * int(resumed.group(1))
    )
    ws = Workspace(workspace)
    assert [ws.newest_entry(i, verify=False).env_steps for i in range(3)] == [512, 2048, 512]
    steps = sorted({r["env_steps"] for r in ws.read_lineage() if r["member"] == 1})
    assert steps == list(range(128, 2049, 128))  # every check, before and after the kill
    assert stdout.splitlines()[0].split() == [
        "member", "status", "restarts", "env_steps", "objective", "best", "lineage",
        "hyperparameters",
    ]  # fmt: skip

    code, status, stderr = run(LAUNCH, "--workspace", workspace, "--status")
    assert code == 0, stderr
    lines = status.splitlines()
    assert len(lines) == 5 and lines[0] == stdout.splitlines()[0]
    rows = [line.split() for line in lines[1:4]]
    assert [row[:4] for row in rows] == [
        ["000", "finished", "0", "512"],
        ["001", "finished", "1", "2048"],
        ["002", "finished", "0", "512"],
    ]
    for idx, row in enumerate(rows):
        entry = ws.newest_entry(idx, verify=False)
        assert float(row[4]) == float(f"{entry.objective:.4g}")
        with open(os.path.join(workspace, f"{idx:03d}", PBT_HYPERPARAMETERS)) as f:
            in_force = json.load(f)["values"]  # may differ from the entry's after a change
        assert f"Adam.lr={in_force['Adam.lr']:.4g}," in row
    objectives = [ws.newest_entry(i, verify=False).objective for i in range(3)]
    assert lines[4].startswith(f"objective: best {max(objectives):.4g}, median ")

    # each member's best checkpoint plays (its run is the member's root_dir above the file)
    best = ws.best(1)
    published = [e.objective for e in ws.history(1) if math.isfinite(e.objective)]
    assert best.path.endswith("-p001.pt") and best.objective == max(published)
    code, played, stderr = run("alf.bin.play", "--checkpoint", best.path, "--num_episodes", 2)
    assert code == 0, stderr
    assert len(re.findall(r"^Episode \d+: return ", played, re.M)) == 2
    assert f"of {os.path.join(workspace, '001')} " in stderr  # "Playing iteration N of DIR"


def test_members_run_in_turns_on_one_slot(tmp_path):
    """Member 0 trains to 512 env steps in two turns; member 1 ends at its first check."""
    workspace = str(tmp_path / "ws")
    proc = launch(
        workspace, "--num_policies", 2, "--max_parallel", 1,
        "--conf_param", "PBTConfig.interval_steps=256",
        "--member_conf_param", "1:TrainerConfig.num_iterations=8",
    )  # fmt: skip
    code, _, stderr = finish(proc)
    assert code == 0, stderr[-3000:]
    members = record(workspace)["members"]
    assert [(m["status"], m["attempts"]) for m in members] == [("finished", 2), ("finished", 1)]
    assert all("PBTConfig.stop_after_check=True" in m["command"] for m in members)
    order = [(r["member"], r["env_steps"]) for r in Workspace(workspace).read_lineage()]
    assert order == [(0, 256), (1, 256), (0, 512)]
    with open(os.path.join(workspace, "logs", "000.log")) as f:
        assert "Resumed from iteration 8 (256 env steps)" in f.read()
    for idx, steps in ((0, 512), (1, 256)):
        markers = os.path.join(workspace, f"{idx:03d}", "pbt")
        assert not os.path.exists(os.path.join(markers, "yielded"))
        with open(os.path.join(markers, "finished")) as f:
            assert json.load(f) == {"env_steps": steps}


def test_a_stop_signal_reaches_the_members_which_checkpoint_and_exit(tmp_path):
    workspace = str(tmp_path / "ws")
    proc = launch(
        workspace, "--num_policies", 2,
        "--conf_param", "TrainerConfig.num_iterations=100000",
    )  # fmt: skip
    pids = [
        wait_for(lambda i=idx: running_with_checkpoint(workspace, i, 4), what=f"member {idx}")
        for idx in (0, 1)
    ]
    os.kill(pids[0], signal.SIGTERM)  # from elsewhere: member 0 stops and is not restarted
    wait_for(lambda: record(workspace)["members"][0]["status"] == "interrupted", what="stop")
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code, _, stderr = finish(proc)
    assert time.monotonic() - started < 30
    assert code == 0, stderr[-3000:]
    assert "alf.bin.pbt_launch: SIGTERM: stopping" in stderr
    members = record(workspace)["members"]
    assert [(m["status"], m["exit_code"], m["attempts"]) for m in members] == [
        ("interrupted", 0, 1)
    ] * 2
    for idx in (0, 1):
        with open(os.path.join(workspace, "logs", f"{idx:03d}.log")) as f:
            assert "Received SIGTERM: saving a checkpoint and stopping" in f.read()


def test_refused_input_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    # submitit hidden, installed or not: the launcher must refuse --backend slurm without it
    hidden = tmp_path / "no_submitit"
    hidden.mkdir()
    (hidden / "submitit.py").write_text('raise ImportError("hidden by the test")\n')
    paths = [str(hidden), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    cases = [
        (["--num_policies", 2, "--backend", "slurm"], "--backend slurm needs submitit"),
        (
            ["--num_policies", 2, "--member_conf_param", "5:Adam.lr=1e-3"],
            "--member_conf_param '5:Adam.lr=1e-3': member 5 is not in 0..1",
        ),
        (
            ["--num_policies", 2, "--conf_param", "PBTConfig.policy_idx=1"],
            "--conf_param 'PBTConfig.policy_idx=1': PBTConfig.policy_idx is set by",
        ),
        (
            ["--num_policies", 2, "--conf_param", "PBTConfig.mutation={'Adam.lr': 'jump'}"],
            "PBTConfig.mutation: Mutation 'Adam.lr': unknown kind 'jump'",
        ),
        (
            ["--num_policies", 2, "--num_processes", 3],
            "create_environment.num_parallel_environments=2 is a member's total over its "
            "--num_processes 3 learner ranks and must divide by 3",
        ),
    ]
    procs = [launch(workspace, *args) for args, _ in cases]
    for proc, (_, message) in zip(procs, cases):
        code, _, stderr = finish(proc)
        assert code == 2
        assert message in one_error_line(stderr, "pbt_launch")
    assert not workspace.exists()


def test_members_are_spread_over_the_visible_gpus():
    from alf.tuning.pbt.launcher import device_env

    assert [device_env({}, k, 2)["CUDA_VISIBLE_DEVICES"] for k in range(5)] == list("01010")
    visible = {"CUDA_VISIBLE_DEVICES": "3, 5,7", "X": "1"}
    assert [device_env(visible, k, 3)["CUDA_VISIBLE_DEVICES"] for k in range(4)] == list("3573")
    assert device_env(visible, 1, 3)["X"] == "1" and visible["CUDA_VISIBLE_DEVICES"] == "3, 5,7"
    assert device_env({"X": "1"}, 4, 0) == {"X": "1"}
    # members of 2 learner ranks: one device a rank, blocks round-robin
    two = [device_env({}, k, 4, num_processes=2)["CUDA_VISIBLE_DEVICES"] for k in range(3)]
    assert two == ["0,1", "2,3", "0,1"]
    assert device_env(visible, 0, 3, num_processes=4)["CUDA_VISIBLE_DEVICES"] == "3,5,7"


def test_the_slurm_backend_runs_members_as_submitit_jobs(tmp_path):
    """Without Slurm, submitit runs the jobs on this machine (its local executor): the same
    submission, polling and result path as on a cluster, minus ``sbatch``."""
    pytest.importorskip("submitit")
    workspace = str(tmp_path / "ws")
    code, stdout, stderr = finish(launch(workspace, "--num_policies", 2, "--backend", "slurm"))
    assert code == 0, stderr[-3000:]
    members = record(workspace)["members"]
    assert [(m["status"], m["exit_code"]) for m in members] == [("finished", 0)] * 2
    assert sorted(os.listdir(os.path.join(workspace, "slurm")))  # submitit's job files
    ws = Workspace(workspace)
    assert [ws.newest_entry(i, verify=False).env_steps for i in range(2)] == [512, 512]
    for idx in range(2):  # a decision at every check of each member
        steps = sorted(r["env_steps"] for r in ws.read_lineage() if r["member"] == idx)
        assert steps == [128, 256, 384, 512]
    assert [line.split()[:4] for line in stdout.splitlines()[1:3]] == [
        ["000", "finished", "0", "512"],
        ["001", "finished", "0", "512"],
    ]


SAC_PBT_CONF = os.path.join(REPO, "tests", "confs", "tiny_sac_pbt_conf.py")
RANK_DIGEST = re.compile(
    r"PBT member 1: after the exploit: learner rank (\d) holds the algorithm state sha256 "
    r"([0-9a-f]{64})"
)


def test_members_on_two_learner_ranks_each_exploit_with_equal_ranks(tmp_path):
    """Two SAC members of 2 ranks each (``--num_processes 2``), in turns on one slot, so the
    order is fixed: member 0 trains its 4 iterations to its one check, then member 1, whose
    objective names no episode metric (NaN: the worst), copies member 0 at its check; both
    its ranks log the same state afterwards."""
    workspace = str(tmp_path / "ws")
    proc = start(
        LAUNCH, "--conf", SAC_PBT_CONF, "--workspace", workspace, "--nostore_snapshot",
        "--num_policies", 2, "--max_parallel", 1, "--num_processes", 2,
        "--conf_param", "PBTConfig.replay_buffer_on_exploit='keep'",
        "--conf_param", "TrainerConfig.num_iterations=4",
        "--member_conf_param", "1:PBTConfig.objective='AverageEnvInfo/none'",
    )  # fmt: skip
    code, _, stderr = finish(proc)
    assert code == 0, stderr[-3000:]
    launched = record(workspace)
    assert launched["num_processes"] == 2
    members = launched["members"]
    assert [(m["status"], m["attempts"]) for m in members] == [("finished", 1)] * 2
    assert all("--num_processes 2" in " ".join(m["command"]) for m in members)
    lineage = [
        (r["member"], r["env_steps"], r["kind"], r["source"])
        for r in Workspace(workspace).read_lineage()
    ]
    assert lineage == [(0, 32, "continue", None), (1, 32, "exploit", 0)]
    with open(os.path.join(workspace, "logs", "001.log")) as f:
        found = RANK_DIGEST.findall(f.read())
    assert sorted(rank for rank, _ in found) == ["0", "1"]  # one line a rank
    assert len({digest for _, digest in found}) == 1
    with open(os.path.join(workspace, "001", "config_files", "run.json")) as f:
        assert json.load(f)["learner_processes"] == 2
