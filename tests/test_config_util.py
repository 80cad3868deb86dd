"""Tests for the public configuration module ``alf.config_util`` (ALF's import path).

The tests of each part of the implementation are in ``tests/configuration``.
"""

import json
import os
import subprocess
import sys

import alf
from alf import config_util
from alf.configuration import binding, decorator, loader, writer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_config_util_exports_the_implementation_and_alf_reexports_it():
    implementations = {
        "config": binding.config,
        "config1": binding.config1,
        "configurable": decorator.configurable,
        "define_config": binding.define_config,
        "get_config_value": binding.get_config_value,
        "load_config": loader.load_config,
        "operative_config_str": writer.operative_config_str,
        "repr_wrapper": writer.repr_wrapper,
        "validate_pending_configs": binding.validate_pending_configs,
        "check_command_line_applied": binding.check_command_line_applied,
    }
    for name, function in implementations.items():
        assert getattr(config_util, name) is function, name
    assert len(set(config_util.__all__)) == len(config_util.__all__) == 20
    for name in config_util.__all__:
        assert getattr(config_util, name) is not None, name
    for name in alf.__all__:
        assert getattr(alf, name) is getattr(config_util, name), name


_CONF = """\
import alf

alf.config(
    "create_environment", env_name="CartPole-v1", num_parallel_environments=2, nonparallel=True
)
alf.config("TrainerConfig", unroll_length=4, num_iterations=3, random_seed=7)
"""

_BUILD = """\
import json, sys

import alf
from alf.utils import common

before = sorted(m for m in ("torch", "alf.algorithms.config", "alf.environments.utils")
                if m in sys.modules)
common.parse_conf_file(sys.argv[1])

import gymnasium as gym
from alf.algorithms import TrainerConfig
from alf.environments import create_environment

config = TrainerConfig()
env = create_environment(seed=config.random_seed)
time_step = env.reset()
expected = [gym.make("CartPole-v1").reset(seed=seed)[0].tolist() for seed in (7, 8)]
print(json.dumps({
    "imported_before_conf": before,
    "trainer": [config.unroll_length, config.num_iterations, config.random_seed],
    "batch_size": env.batch_size,
    "observation": time_step.observation.tolist(),
    "expected_observation": expected,
}))
env.close()
"""


def test_conf_configures_trainer_and_environment_without_importing_them(tmp_path):
    """A conf with nothing but ``import alf`` sets ``TrainerConfig`` and
    ``create_environment``: their modules are imported when the conf names them."""
    conf = tmp_path / "no_imports_conf.py"
    conf.write_text(_CONF)
    script = tmp_path / "build.py"
    script.write_text(_BUILD)
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, str(script), str(conf)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    built = json.loads(result.stdout.strip().splitlines()[-1])
    assert built["imported_before_conf"] == []
    assert built["trainer"] == [4, 3, 7]
    assert built["batch_size"] == 2
    assert built["observation"] == built["expected_observation"]
