"""``tiny_ppo_conf.py`` whose env 1 kills its own process on its ``sampler_fault_step``-th
step (counted over the process's life; 0: never), for the remote-sampler failure tests.
With ``sampler_fault_marker`` set it dies only once (the file is created as it dies),
so its replacement runs on; without, every replacement dies again."""

import functools

import alf
from tests.samplers.faults import load_dying_env

alf.import_config("tiny_ppo_conf.py")
alf.define_config("sampler_fault_step", 0)
alf.define_config("sampler_fault_marker", "")

alf.config(
    "create_environment",
    env_load_fn=functools.partial(
        load_dying_env,
        die_env_id=1,
        at=alf.get_config_value("sampler_fault_step"),
        marker=alf.get_config_value("sampler_fault_marker") or None,
    ),
)
alf.config("TrainerConfig", evaluate=False)
