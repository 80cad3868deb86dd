"""PPO CartPole learns with 2 process samplers, both inference modes (slow: 25-40 s each
on a quiet 2-core machine, 1.5-2 min on a busy one; ``pytest -m slow``): the command line
of the example conf with ``--conf_param SamplerConfig.num_samplers=2`` reaches an
evaluation return of 475.
The fast twins are ``test_identity`` (the same experience as in-process, bit for bit)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from alf.utils.checkpoint_utils import Checkpointer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
@pytest.mark.parametrize("inference", ["local", "server"])
def test_ppo_cart_pole_learns_with_two_samplers(inference, tmp_path):
    conf = os.path.join(REPO, "alf", "examples", "ppo_cart_pole_conf.py")
    root_dir = tmp_path / "run"
    command = [sys.executable, "-m", "alf.bin.train", "--conf", conf, "--root_dir", str(root_dir)]
    for param in [
        "SamplerConfig.num_samplers=2",
        f"SamplerConfig.inference={inference!r}",
        "TrainerConfig.random_seed=0",
    ]:
        command += ["--conf_param", param]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    best = Checkpointer(str(root_dir / "train" / "algorithm")).load_best()
    assert best["best_score"] >= 475
