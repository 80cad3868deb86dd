"""``PolicyTrainer`` with an ``ObservationNormalizer``: prenormalization steps are counted,
evaluation does not touch the statistics, and the statistics are in the checkpoint."""

import os

import pytest
import torch

import alf
from alf.algorithms.config import TrainerConfig
from alf.trainers.policy_trainer import PolicyTrainer
from alf.utils import common

CONF = os.path.join(os.path.dirname(__file__), "..", "confs", "tiny_ppo_obs_norm_conf.py")


@pytest.fixture(autouse=True)
def clean_configs():
    num_threads = torch.get_num_threads()
    alf.reset_configs()
    yield
    alf.reset_configs()
    torch.set_num_threads(num_threads)


def test_prenormalization_counts_steps_and_statistics_are_checkpointed(tmp_path):
    params = [
        f"TrainerConfig.root_dir={str(tmp_path)!r}",
        "TrainerConfig.num_iterations=2",
        "TrainerConfig.eval_interval=1",
    ]
    common.parse_conf_file(CONF, params)
    trainer = PolicyTrainer(TrainerConfig())
    trainer.train()
    # 2 envs: 10 prenormalization steps each, then 2 unrolls of 16 steps each
    assert trainer.env_steps == 2 * 10 + 2 * 2 * 16
    ckpt = torch.load(os.path.join(tmp_path, "train", "algorithm", "ckpt-2.pt"), weights_only=True)
    stats = {k: v for k, v in ckpt["algorithm"].items() if "_data_transformer" in k}
    count = [v for k, v in stats.items() if k.endswith("count")]
    # every prenormalization and unrolled step once; evaluations (2) and the bootstrap
    # rows of the 2 iterations add nothing
    assert [int(c) for c in count] == [2 * 10 + 2 * 2 * 16]
    mean = [v for k, v in stats.items() if k.endswith("mean")][0]
    assert mean.shape == (4,) and bool(mean.abs().sum() > 0)
