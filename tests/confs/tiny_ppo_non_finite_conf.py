"""``tiny_ppo_conf.py`` whose training envs return a NaN reward (or, with
``fault_field='observation'``, an inf observation) on their ``fault_step``-th step."""

import functools

import alf
from alf.environments import suite_gym
from tests.environments.faulty_envs import NonFiniteAt

alf.import_config("tiny_ppo_conf.py")
alf.define_config("fault_step", 150)
alf.define_config("fault_field", "reward")

fault = functools.partial(
    NonFiniteAt,
    at=alf.get_config_value("fault_step"),
    field=alf.get_config_value("fault_field"),
)
alf.config(
    "create_environment",
    env_load_fn=functools.partial(suite_gym.load, gym_env_wrappers=(fault,)),
)
alf.config("TrainerConfig", evaluate=False)
