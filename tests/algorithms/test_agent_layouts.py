"""A composed agent (PPO + RND, ``tests/confs/tiny_ppo_rnd_conf.py``) in every layout:

* a run resumed from a checkpoint ends exactly as the uninterrupted one (every part's
  weights, optimizers and normalizer statistics);
* server inference with 2 samplers trains on bit-identical unrolls and ends with
  bit-identical state (the intrinsic reward is recorded by the server's rollout step and
  normalized on the learner's side);
* local inference with 2 samplers trains every part (the copies act with the published
  weights and statistics);
* two learner ranks (``--num_processes 2``): the RND statistics are those of both ranks'
  rows (pooled), and the predictor is trained by both ranks' gradients.
"""

from __future__ import annotations

import os

import pytest
import torch

import alf
from alf.utils.checkpoint_utils import Checkpointer
from tests.bin.test_train_play import REPO, load_ckpt, scalar_tags, train
from tests.samplers.conftest import (
    assert_identical,
    build_trainer,
    module_state,
    record_unrolls,
    sampler_params,
)

CONF = os.path.join(REPO, "tests", "confs", "tiny_ppo_rnd_conf.py")
#: rows whose observations one iteration merges into RND's statistics: 16 unrolled steps
#: and the bootstrap row, of 2 envs
ROWS_PER_ITERATION = 17 * 2


@pytest.fixture(autouse=True)
def _reset_configs():
    yield
    alf.reset_configs()  # the conf's values must not reach the tests that follow


def _run(params, root_dir):
    trainer = build_trainer(CONF, params, root_dir)
    unrolls = record_unrolls(trainer.algorithm)
    trainer.train()
    return unrolls, module_state(trainer.algorithm)


def _checkpoint(root_dir, iteration: int) -> dict:
    return Checkpointer(str(root_dir / "train" / "algorithm")).load(iteration, map_location="cpu")


def test_resume_of_a_composed_agent_is_exact(tmp_path):
    build_trainer(CONF, [], tmp_path / "full").train()
    resumed = tmp_path / "resumed"
    build_trainer(CONF, ["TrainerConfig.num_iterations=8"], resumed).train()
    build_trainer(CONF, [], resumed).train()
    full, again = _checkpoint(tmp_path / "full", 16), _checkpoint(resumed, 16)
    names = [n for n in full["algorithm"] if n.startswith("_irm.")]
    assert any("_predictor_net" in n for n in names) and any(n.endswith(".count") for n in names)
    for name, value in full["algorithm"].items():
        if torch.is_tensor(value):
            assert torch.equal(value, again["algorithm"][name]), name


def test_server_inference_trains_a_composed_agent_bit_identically(tmp_path):
    unrolls, state = _run([], tmp_path / "in_process")
    got_unrolls, got_state = _run(sampler_params(2, "server"), tmp_path / "server")
    assert len(unrolls) == len(got_unrolls) == 16
    for x, y in zip(unrolls, got_unrolls):
        assert_identical(x, y)
    for name in state:
        assert torch.equal(state[name], got_state[name]), name
    count = state["_irm._observation_normalizer._stats.0.count"]
    assert float(count) == 16 * ROWS_PER_ITERATION


def test_local_inference_samplers_train_every_part(tmp_path):
    initial = module_state(build_trainer(CONF, [], tmp_path / "init").algorithm)
    unrolls, state = _run(sampler_params(2, "local"), tmp_path / "local")
    assert len(unrolls) == 16
    rewards = torch.cat([u.rollout_info.irm.reward.flatten() for u in unrolls])
    assert bool((rewards > 0).all())  # every row's RND error, recorded by the copies
    changed = [n for n in state if not torch.equal(state[n], initial[n])]
    assert any(n.startswith("_irm._predictor_net") for n in changed)
    assert not any(n.startswith("_irm._target_net") for n in changed)
    count = state["_irm._observation_normalizer._stats.0.count"]
    assert float(count) == 16 * ROWS_PER_ITERATION


def test_two_learner_ranks_train_the_parts_on_both_ranks_data(tmp_path):
    root = tmp_path / "ddp"
    code, _, stderr = train(root, "--num_processes", "2", "--nostore_snapshot", conf=CONF)
    assert code == 0, stderr[-3000:]
    state = load_ckpt(root, 16)["algorithm"]
    # each rank runs 1 env; the statistics pool both ranks' rows: those of 2 envs
    assert float(state["_irm._observation_normalizer._stats.0.count"]) == 16 * ROWS_PER_ITERATION
    tags = scalar_tags(root / "train")
    assert {"loss/RNDAlgorithm/loss", "reward/intrinsic", "reward/overall"} <= tags
