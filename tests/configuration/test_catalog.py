"""Tests for alf.configuration.catalog: alf's own configurables are found by name without an
import, and reading alf's source finds exactly the configurables that its modules register."""

import json
import os
import subprocess
import sys

import pytest

import alf
from alf import config_util
from alf.configuration import catalog

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_REGISTER_ALL = """\
import importlib, json, pkgutil

import alf
from alf.configuration.registry import REGISTRY

for info in pkgutil.walk_packages(alf.__path__, "alf."):
    if not info.name.startswith(("alf.examples", "alf.bin")):
        importlib.import_module(info.name)
print(json.dumps(sorted(name for name in REGISTRY if name.startswith("alf."))))
"""

_ON_DEMAND = """\
import json, sys

import alf

def alf_modules():
    return sorted(m for m in sys.modules if m.startswith("alf."))

result = {"env_utils_before": "alf.environments.utils" in sys.modules}
alf.config("create_environment", num_parallel_environments=3)
result["env_utils_after"] = "alf.environments.utils" in sys.modules
result["value"] = alf.get_config_value("create_environment.num_parallel_environments")
modules = alf_modules()
alf.config("TrainerConfg", unroll_length=1)
result["unknown_imports"] = sorted(set(alf_modules()) - set(modules))
result["ppo_before"] = "alf.algorithms.ppo_algorithm" in sys.modules
alf.config_util.apply_gin_params(
    ["ActorCriticLoss.gamma = 0.5", "TrainerConfig.algorithm_ctor = @PPOAlgorithm"]
)
result["gin_value"] = alf.get_config_value("ActorCriticLoss.gamma")
ctor = alf.get_config_value("TrainerConfig.algorithm_ctor")
result["gin_reference"] = ctor is sys.modules["alf.algorithms.ppo_algorithm"].PPOAlgorithm
print(json.dumps(result))
"""


def _run(script):
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=180, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_catalog_lists_exactly_the_configurables_alf_registers():
    registered = _run(_REGISTER_ALL)
    listed = sorted(full for _, full in catalog.full_names())
    assert len(listed) == len(set(listed)) and len(listed) > 50  # the source was read
    missing = sorted(set(registered) - set(listed))
    stale = sorted(set(listed) - set(registered))
    assert (missing, stale) == ([], []), "alf/configuration/catalog.py misreads the source"


def test_alf_configurables_are_found_by_name_without_an_import():
    result = _run(_ON_DEMAND)
    assert result == {
        "env_utils_before": False,
        "env_utils_after": True,
        "value": 3,
        "unknown_imports": [],
        "ppo_before": False,
        "gin_reference": True,
        "gin_value": 0.5,
    }


def test_unknown_name_is_reported_by_name_with_alf_suggestions():
    alf.config("TrainerConfg", unroll_length=8)
    with pytest.raises(
        ValueError,
        match=(
            r"^Unknown configurable 'TrainerConfg' .*"
            r"Did you mean 'TrainerConfig' or 'SamplerConfig'\?"
        ),
    ):
        config_util.validate_pending_configs()
