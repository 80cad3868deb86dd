"""The Ray backend (``pip install alf[ray]``; skipped without Ray): samplers as Ray
actors on a local cluster started for the run and shut down with it.

The smoke test checks bit-identity with the in-process run (server inference, as
``test_identity``) over 3 iterations; the slow one that PPO CartPole learns with 2 Ray
samplers. Both check that no Ray process is left afterwards.
"""

from __future__ import annotations

import os
import time

import pytest
import torch

from alf.utils.checkpoint_utils import Checkpointer
from tests.samplers.conftest import (
    TINY_PPO,
    assert_identical,
    build_trainer,
    module_state,
    record_unrolls,
    sampler_params,
)

pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

_RAY_PROCESS_MARKERS = ("raylet", "gcs_server", "default_worker.py", "ray::", "ray/dashboard")


def _ray_processes() -> list[str]:
    found = []
    for process in psutil.process_iter(["pid", "name", "cmdline"]):
        text = " ".join([process.info["name"] or ""] + (process.info["cmdline"] or []))
        if process.info["pid"] != os.getpid() and any(m in text for m in _RAY_PROCESS_MARKERS):
            found.append(f"{process.info['pid']}: {text[:120]}")
    return found


def _assert_no_ray_process_left() -> None:
    deadline = time.monotonic() + 20
    while _ray_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _ray_processes() == []


def _ray_params(inference: str) -> list[str]:
    return sampler_params(2, inference) + ["SamplerConfig.backend='ray'"]


def _iterate(trainer, num: int):
    unrolls = record_unrolls(trainer.algorithm)
    try:
        for _ in range(num):
            trainer.algorithm.train_iter()
        return unrolls, module_state(trainer.algorithm)
    finally:
        trainer.close()


def test_ray_samplers_smoke(tmp_path):
    assert _ray_processes() == []
    expected, expected_state = _iterate(build_trainer(TINY_PPO, [], tmp_path / "a"), 3)
    got, state = _iterate(build_trainer(TINY_PPO, _ray_params("server"), tmp_path / "b"), 3)
    for x, y in zip(expected, got):
        assert_identical(x, y)
    for name, value in expected_state.items():
        assert torch.equal(value, state[name]), name
    _assert_no_ray_process_left()


@pytest.mark.slow
def test_ppo_cart_pole_learns_with_two_ray_samplers(tmp_path):
    params = _ray_params("local") + ["TrainerConfig.random_seed=0"]
    trainer = build_trainer("ppo_cart_pole_conf.py", params, tmp_path / "run")
    trainer.train()
    best = Checkpointer(str(tmp_path / "run" / "train" / "algorithm")).load_best()
    assert best["best_score"] >= 475
    _assert_no_ray_process_left()


def test_joins_a_running_cluster_and_leaves_it_running(tmp_path):
    """``SamplerConfig.ray_address``: the samplers run on a cluster made by ``ray start``
    (token authentication, Ray's default: ``RAY_AUTH_MODE=token`` in the environment), the
    run trains, and the cluster is still there afterwards; a wrong address is one line."""
    import socket
    import subprocess
    import sys

    from tests.bin.test_train_play import REPO

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, RAY_AUTH_MODE="token")
    ray_cli = [sys.executable, "-m", "ray.scripts.scripts"]
    start = [*ray_cli, "start", "--head", "--port", str(port), "--num-cpus", "2"]
    start += ["--include-dashboard", "false", "--disable-usage-stats"]
    subprocess.run(start, env=env, check=True, capture_output=True, timeout=180)
    try:
        command = [sys.executable, "-m", "alf.bin.train", "--conf", TINY_PPO]
        command += ["--root_dir", str(tmp_path / "run"), "--nostore_snapshot"]
        for param in _ray_params("local") + [f"SamplerConfig.ray_address='127.0.0.1:{port}'"]:
            command += ["--conf_param", param]
        run = subprocess.run(
            command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, run.stderr[-3000:]
        assert "Connected to Ray cluster" in run.stderr
        assert any("gcs_server" in p for p in _ray_processes())  # left running
        env_without_auth = dict(os.environ)
        env_without_auth.pop("RAY_AUTH_MODE", None)
        command[command.index("--root_dir") + 1] = str(tmp_path / "other")
        run = subprocess.run(
            command, env=env_without_auth, cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 2
        assert "RAY_AUTH_MODE=token" in run.stderr.strip().splitlines()[-1]
    finally:
        subprocess.run([*ray_cli, "stop", "--force"], env=env, capture_output=True, timeout=120)
    _assert_no_ray_process_left()
