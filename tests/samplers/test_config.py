"""``SamplerConfig``: bad values are one clear error naming the key; the default keeps
the actor in-process; the env count must match ``create_environment``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import alf
from alf.learners.unroller import Unroller
from alf.samplers import SamplerConfig
from alf.samplers.group import create_samplers
from tests.samplers.conftest import TINY_PPO, build_trainer, sampler_params


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"inference": "x"}, "SamplerConfig.inference must be 'local' or 'server', got 'x'"),
        ({"backend": "threads"}, "SamplerConfig.backend must be 'processes', 'ray' or None"),
        ({"num_samplers": -1}, "SamplerConfig.num_samplers must be an int >= 0, got -1"),
        ({"num_samplers": 2.0}, "SamplerConfig.num_samplers must be an int >= 0, got 2.0"),
        ({"envs_per_sampler": 0}, "SamplerConfig.envs_per_sampler must be an int >= 1"),
        ({"batch_timeout": 0}, "SamplerConfig.batch_timeout must be a number > 0, got 0"),
        ({"max_policy_lag": -1}, "SamplerConfig.max_policy_lag must be an int >= 0"),
    ],
)
def test_bad_values_name_the_key(kwargs, message):
    with pytest.raises(ValueError) as e:
        SamplerConfig(**kwargs)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_env_counts_must_match_create_environment():
    config = SamplerConfig(num_samplers=2, envs_per_sampler=3)
    with pytest.raises(ValueError, match=r"set create_environment.num_parallel_environments=6"):
        config.envs_per_sampler_for(8)
    with pytest.raises(ValueError, match=r"num_samplers=3 does not divide .*=8"):
        SamplerConfig(num_samplers=3).envs_per_sampler_for(8)
    assert SamplerConfig(num_samplers=2).envs_per_sampler_for(8) == 4
    assert config.envs_per_sampler_for(6) == 3


def test_default_keeps_the_in_process_unroller(tmp_path):
    assert not SamplerConfig().enabled
    assert not SamplerConfig(backend=None, num_samplers=2).enabled
    trainer = build_trainer(TINY_PPO, [], tmp_path / "run")
    try:
        unroller = trainer.algorithm.unroller
        assert type(unroller) is Unroller and unroller.streams is not None
    finally:
        trainer.close()


def test_samplers_need_a_conf_file():
    alf.reset_configs()
    alf.config("SamplerConfig", num_samplers=2)
    with pytest.raises(ValueError, match=r"needs the configuration loaded from a conf file"):
        create_samplers(seed=1)


def _train(tmp_path, params):
    command = [sys.executable, "-m", "alf.bin.train", "--conf", TINY_PPO]
    command += ["--root_dir", str(tmp_path / "run")]
    for param in params:
        command += ["--conf_param", param]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_train_reports_an_inconsistent_env_count_in_one_line(tmp_path):
    result = _train(tmp_path, sampler_params(3, "local"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert "SamplerConfig.num_samplers=3 does not divide" in lines[-1]
    assert "create_environment.num_parallel_environments=2" in lines[-1]
    assert not (tmp_path / "run").exists()


def test_train_reports_a_sampler_that_cannot_start_in_one_line(tmp_path):
    params = sampler_params(2, "server") + ["create_environment.env_name='NoSuchEnv-v0'"]
    result = _train(tmp_path, params)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert "raised while starting: ValueError: Unknown gymnasium environment id" in last
    assert last.startswith("alf.bin.train: error: sampler ")
    assert not (tmp_path / "run").exists()


def test_a_local_inference_sampler_multiplies_at_the_learners_precision():
    import torch

    from alf.samplers.worker import SamplerSpec, SamplerWorker

    params = ["TrainerConfig.matmul_precision='medium'"]
    spec = SamplerSpec((TINY_PPO, params, []), index=0, num_envs=1, env_seed=0, inference="local")
    alf.reset_configs()
    try:
        worker = SamplerWorker(spec)
        worker.close()
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        alf.reset_configs()
        torch.set_float32_matmul_precision("highest")
