"""The Ray backend (``pip install alf[ray]``; skipped without Ray): samplers as Ray
actors on a local cluster started for the run and shut down with it.

The smoke test checks bit-identity with the in-process run (server inference, as
``test_identity``) over 3 iterations; the slow one that PPO CartPole learns with 2 Ray
samplers. Both check that no Ray process is left afterwards. Which cluster a run uses
(its own, or the one ``SamplerConfig.ray_address`` names) is ``test_ray_cluster``.
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
