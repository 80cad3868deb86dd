"""alf's public API: ALF's import paths, each package's ``__all__``, and what importing costs."""

import importlib
import json
import os
import subprocess
import sys
import types

import pytest

import alf
from alf.utils.lazy_exports import lazy_exports

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PACKAGES = {
    "alf": 12,
    "alf.algorithms": 65,
    "alf.data_structures": 10,
    "alf.environments": 29,
    "alf.layers": 39,
    "alf.networks": 35,
    "alf.optimizers": 5,
}
"""Public packages (and the module ``alf.data_structures``) -> number of names exported."""


def _run(code):
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_alf_import_paths():
    from alf.algorithms import (
        DdpgAlgorithm,
        DqnAlgorithm,
        PPOAlgorithm,
        PPOLoss,
        SacAlgorithm,
        Td3Algorithm,
        TrainerConfig,
    )
    from alf.config_util import config, configurable
    from alf.data_transformers import RewardScaling
    from alf.environments import alf_wrappers, create_environment, suite_gym
    from alf.networks import ActorDistributionNetwork, ValueNetwork
    from alf.optimizers import Adam

    algorithms = importlib.import_module("alf.algorithms.ppo_algorithm")
    assert PPOAlgorithm is algorithms.PPOAlgorithm
    assert SacAlgorithm.__module__ == "alf.algorithms.sac_algorithm"
    assert DdpgAlgorithm.__module__ == Td3Algorithm.__module__ == "alf.algorithms.ddpg_algorithm"
    assert DqnAlgorithm.__module__ == "alf.algorithms.dqn_algorithm"
    assert PPOLoss.__module__ == "alf.algorithms.ppo_loss"
    assert TrainerConfig.__module__ == "alf.algorithms.config"
    assert RewardScaling.__module__ == "alf.data_transformers.transformers"
    assert suite_gym is sys.modules["alf.environments.suite_gym"]
    assert alf_wrappers is sys.modules["alf.environments.alf_wrappers"]
    assert create_environment is sys.modules["alf.environments.utils"].create_environment
    # ALF's Atari paths: gym_wrappers.DMAtariPreprocessing, alf_wrappers.AtariTerminal...
    from alf.environments import gym_wrappers, suite_atari

    assert gym_wrappers.DMAtariPreprocessing.__module__ == "alf.environments.atari_preprocessing"
    assert alf_wrappers.AtariTerminalOnLifeLossWrapper.__module__ == alf_wrappers.__name__
    assert suite_atari is sys.modules["alf.environments.suite_atari"]
    assert ActorDistributionNetwork.__module__ == "alf.networks.actor_distribution_networks"
    assert ValueNetwork.__module__ == "alf.networks.value_networks"
    assert Adam is sys.modules["alf.optimizers.optimizers"].Adam
    assert (config, configurable) == (alf.config, alf.configurable)


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_every_name_in_all_resolves(name):
    package = importlib.import_module(name)
    assert len(package.__all__) == len(set(package.__all__)) == PACKAGES[name]
    for public in package.__all__:
        value = getattr(package, public)
        assert public in dir(package)
        if isinstance(value, types.ModuleType):
            assert value.__name__ == f"{name}.{public}"
        else:
            # a class or function, exported under its own name from one of alf's modules
            assert value.__name__ == public
            assert value.__module__.startswith("alf.")
            assert getattr(sys.modules[value.__module__], public) is value
    star = {}
    exec(f"from {name} import *", star)
    assert sorted(k for k in star if k != "__builtins__") == sorted(package.__all__)


def test_unknown_package_attribute_is_reported_by_name():
    import alf.algorithms

    with pytest.raises(AttributeError, match="module 'alf.algorithms' has no attribute 'PPO'"):
        alf.algorithms.PPO  # noqa: B018 (the lookup is the test)
    with pytest.raises(ImportError, match="cannot import name 'PPO'"):
        exec("from alf.algorithms import PPO", {})


def test_import_alf_stays_light():
    """``import alf`` (the configuration API) imports neither torch, gin nor a package of
    algorithms, networks or environments; those packages import their modules lazily."""
    loaded = _run(
        "import json, sys\n"
        "import alf\n"
        "heavy = ('torch', 'gin', 'alf.algorithms', 'alf.networks', 'alf.environments')\n"
        "first = [m for m in heavy if m in sys.modules]\n"
        "import alf.algorithms.config, alf.environments\n"
        "second = [m for m in ('torch', 'alf.algorithms.ppo_algorithm') if m in sys.modules]\n"
        "alf.algorithms.PPOAlgorithm\n"
        "print(json.dumps([first, second, 'alf.algorithms.ppo_algorithm' in sys.modules]))"
    )
    assert loaded == [[], [], True]


def test_lazy_exports_import_on_first_access_and_cache():
    package = {"__name__": "alf.environments"}
    getattr_, dir_ = lazy_exports(package, {"utils": ("create_environment",)}, ["suite_gym"])
    assert dir_() == ["__name__", "create_environment", "suite_gym"]
    function = getattr_("create_environment")
    assert function is sys.modules["alf.environments.utils"].create_environment
    assert package["create_environment"] is function
    assert getattr_("suite_gym") is sys.modules["alf.environments.suite_gym"]
    with pytest.raises(AttributeError, match="'alf.environments' has no attribute 'utils'"):
        getattr_("utils")
    with pytest.raises(ValueError, match="'load' is exported twice by package 'pkg'"):
        lazy_exports({"__name__": "pkg"}, {"a": ("load",), "b": ("load", "other")})
