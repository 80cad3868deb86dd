"""ALF's ``get_observation_spec()`` and its kin: the specs of the environment the
algorithm is being built for, as gin confs reference them (``@get_action_spec()``)."""

import pytest

import alf
from alf.algorithms.config import TrainerConfig
from alf.algorithms.factory import create_algorithm
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.data_transformers import ObservationNormalizer
from alf.utils import common
from tests.algorithms.algorithm_test_utils import counting_env


def test_specs_are_those_of_the_environment_being_built_for():
    common._ENV_SPECS.clear()
    with pytest.raises(ValueError, match=r"get_action_spec\(\) is only known once the env"):
        common.get_action_spec()
    env = counting_env(num_envs=2)
    try:
        config = TrainerConfig(
            algorithm_ctor=PPOAlgorithm, data_transformer_ctor=ObservationNormalizer
        )
        create_algorithm(config, env)
        assert common.get_action_spec() == env.action_spec()
        assert common.get_reward_spec() == env.reward_spec()
        assert common.get_raw_observation_spec() == env.observation_spec()
        # after the data transformers (the normalizer makes it float32)
        assert common.get_observation_spec().shape == env.observation_spec().shape
    finally:
        env.close()
        alf.reset_configs()


def test_field_paths_index_nested_specs():
    common.set_global_env_specs({"a": {"b": 1}}, {"x": 2}, None, None)
    assert common.get_raw_observation_spec("a.b") == 1
    assert common.get_observation_spec("x") == 2
    common._ENV_SPECS.clear()
