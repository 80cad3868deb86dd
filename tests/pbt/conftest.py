"""Shared helpers of the PBT member tests: trainers of the tiny PBT conf in this process."""

from __future__ import annotations

import os

import pytest
import torch

import alf
from alf.algorithms.config import TrainerConfig
from alf.trainers.policy_trainer import PolicyTrainer
from alf.utils import common

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY_CONF = os.path.join(REPO, "tests", "confs", "tiny_ppo_conf.py")
TINY_PBT_CONF = os.path.join(REPO, "tests", "confs", "tiny_pbt_conf.py")


def make_trainer(root_dir, *conf_params, conf=TINY_PBT_CONF) -> PolicyTrainer:
    """A ``PolicyTrainer`` of ``conf`` in ``root_dir``; ``conf_params`` win over the conf."""
    alf.reset_configs()
    common.parse_conf_file(conf, [*conf_params, f"TrainerConfig.root_dir={str(root_dir)!r}"])
    return PolicyTrainer(TrainerConfig())


def member_params(workspace, idx: int, num_policies: int = 2, seed: int | None = None) -> list:
    """The ``--conf_param`` values that make a run member ``idx`` of ``workspace``."""
    params = [
        f"PBTConfig.workspace={str(workspace)!r}",
        f"PBTConfig.policy_idx={idx}",
        f"PBTConfig.num_policies={num_policies}",
    ]
    if seed is not None:
        params.append(f"TrainerConfig.random_seed={seed}")
    return params


def make_member(workspace, idx: int, *extra, num_policies: int = 2, seed=None) -> PolicyTrainer:
    """Member ``idx`` training into ``workspace/NNN`` (seed ``idx + 1`` unless given)."""
    seed = idx + 1 if seed is None else seed
    params = [*extra, *member_params(workspace, idx, num_policies, seed)]
    return make_trainer(os.path.join(str(workspace), f"{idx:03d}"), *params)


def tensors(state: dict) -> dict:
    """The top-level tensors of an algorithm state dict, cloned."""
    return {k: v.detach().clone() for k, v in state.items() if isinstance(v, torch.Tensor)}


@pytest.fixture(autouse=True)
def clean_configs():
    """A clean configuration registry; torch's thread count restored (the trainer sets it)."""
    num_threads = torch.get_num_threads()
    alf.reset_configs()
    yield
    alf.reset_configs()
    torch.set_num_threads(num_threads)
