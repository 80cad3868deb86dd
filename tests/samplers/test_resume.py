"""Checkpoints with remote samplers: at every checkpoint the samplers reseed their envs
and random streams from the restart seed, so a run resumed from a checkpoint continues
exactly as the uninterrupted run (local inference, 2 samplers: the case whose actors
draw from their own streams; server inference equals the in-process run, whose resume
is exact, by ``test_identity``)."""

from __future__ import annotations

import torch

from alf.utils.checkpoint_utils import Checkpointer
from tests.samplers.conftest import TINY_PPO, build_trainer, sampler_params


def _checkpoint(root_dir, iteration: int) -> dict:
    checkpointer = Checkpointer(str(root_dir / "train" / "algorithm"))
    return checkpointer.load(iteration, map_location="cpu")


def test_resumed_run_matches_the_uninterrupted_one(tmp_path):
    params = sampler_params(2, "local")
    build_trainer(TINY_PPO, params, tmp_path / "full").train()
    resumed_dir = tmp_path / "resumed"
    build_trainer(TINY_PPO, params + ["TrainerConfig.num_iterations=8"], resumed_dir).train()
    trainer = build_trainer(TINY_PPO, params, resumed_dir)
    trainer.train()
    assert trainer.iteration == 16
    full, resumed = _checkpoint(tmp_path / "full", 16), _checkpoint(resumed_dir, 16)
    assert full["env_steps"] == resumed["env_steps"] == 16 * 2 * 16
    for name, value in full["algorithm"].items():
        if torch.is_tensor(value):
            assert torch.equal(value, resumed["algorithm"][name]), name
    torch.testing.assert_close(full["metrics"], resumed["metrics"], rtol=0, atol=0)
