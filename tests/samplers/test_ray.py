"""The Ray backend (``pip install alf[ray]``; skipped without Ray): samplers as Ray
actors on a local cluster started for the run and shut down with it.

The smoke test checks bit-identity with the in-process run (server inference, as
``test_identity``) over 3 iterations; the slow one that PPO CartPole learns with 2 Ray
samplers. Both check that no process of the run's Ray cluster is left afterwards (another program's
Ray cluster on the machine may run beside them). Which cluster a run uses
(its own, or the one ``SamplerConfig.ray_address`` names) is ``test_ray_cluster``.
"""

from __future__ import annotations

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


def _own_ray_processes() -> list:
    """The Ray processes this test process started (its local cluster's head processes and,
    below them, its workers): another program's Ray cluster on the machine is not ours."""
    own = []
    for process in psutil.Process().children(recursive=True):
        try:
            text = " ".join([process.name()] + process.cmdline())
        except psutil.Error:  # ended meanwhile
            continue
        if any(m in text for m in _RAY_PROCESS_MARKERS):
            own.append(process)
    return own


def _assert_gone(processes: list) -> None:
    """Every process of ``processes`` ends within 20 s."""
    deadline = time.monotonic() + 20
    while any(p.is_running() for p in processes) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert [f"{p.pid}: {p.name()}" for p in processes if p.is_running()] == []


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
    expected, expected_state = _iterate(build_trainer(TINY_PPO, [], tmp_path / "a"), 3)
    trainer = build_trainer(TINY_PPO, _ray_params("server"), tmp_path / "b")
    cluster = _own_ray_processes()
    assert {"gcs_server", "raylet"} <= {p.name() for p in cluster}, cluster
    got, state = _iterate(trainer, 3)
    for x, y in zip(expected, got):
        assert_identical(x, y)
    for name, value in expected_state.items():
        assert torch.equal(value, state[name]), name
    _assert_gone(cluster)


@pytest.mark.slow
def test_ppo_cart_pole_learns_with_two_ray_samplers(tmp_path):
    params = _ray_params("local") + ["TrainerConfig.random_seed=0"]
    trainer = build_trainer("ppo_cart_pole_conf.py", params, tmp_path / "run")
    cluster = _own_ray_processes()
    trainer.train()
    best = Checkpointer(str(tmp_path / "run" / "train" / "algorithm")).load_best()
    assert best["best_score"] >= 475
    _assert_gone(cluster)
