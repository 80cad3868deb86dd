"""Helpers of the remote-sampler tests: build a trainer from a conf file with
``--conf_param`` values (the samplers load the same conf), record the unrolls its
learner receives, and compare nests bit for bit."""

from __future__ import annotations

import os

import pytest
import torch

import alf
import alf.nest as nest
from alf.algorithms.config import TrainerConfig
from alf.trainers.policy_trainer import PolicyTrainer
from alf.utils import common

CONFS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "confs")
TINY_PPO = os.path.join(CONFS, "tiny_ppo_conf.py")
TINY_PPO_OBS_NORM = os.path.join(CONFS, "tiny_ppo_obs_norm_conf.py")


def sampler_params(num_samplers: int, inference: str, **extra) -> list[str]:
    """``--conf_param`` strings of ``SamplerConfig`` (``batch_timeout`` generous: every
    server batch is full, as the bit-identity tests need)."""
    values = dict(num_samplers=num_samplers, inference=inference, batch_timeout=30.0)
    values.update(extra)
    return [f"SamplerConfig.{key}={value!r}" for key, value in values.items()]


def build_trainer(conf: str, params, root_dir) -> PolicyTrainer:
    alf.reset_configs()
    common.parse_conf_file(conf, list(params))
    return PolicyTrainer(TrainerConfig(root_dir=str(root_dir)))


def record_unrolls(algorithm) -> list:
    """Make ``algorithm``'s learner keep a copy of every unroll it trains on: per
    iteration, the experiences with the bootstrap row (if any) stacked ``[T(+1), B]``."""
    recorded = []
    train = algorithm.learner.train

    def recording_train(unroll):
        rows = unroll.experiences + ([unroll.bootstrap] if unroll.bootstrap is not None else [])
        recorded.append(nest.map_structure(lambda x: x.clone(), nest.stack_nests(rows)))
        train(unroll)

    algorithm.learner.train = recording_train
    return recorded


def assert_identical(expected, got) -> None:
    """Every tensor leaf of the two nests is equal, bit for bit (same dtype too)."""
    assert nest.flatten_with_path(expected).__len__() == len(nest.flatten(got))
    for (path, x), y in zip(nest.flatten_with_path(expected), nest.flatten(got)):
        assert x.dtype == y.dtype, path
        assert torch.equal(x, y), f"{path} differs"


def module_state(algorithm) -> dict:
    return {k: v.clone() for k, v in torch.nn.Module.state_dict(algorithm).items()}


@pytest.fixture(autouse=True)
def _reset_configs():
    yield
    alf.reset_configs()
