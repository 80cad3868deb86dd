"""``tiny_ppo_conf.py`` as a PBT member: the learning rate and the entropy bonus mutate, and
a check every 128 env steps (4 iterations) decides from the start."""

import alf

alf.import_config("tiny_ppo_conf.py")

alf.config("PPOLoss", entropy_regularization=0.01)
alf.config(
    "PBTConfig",
    interval_steps=128,
    start_after=0,
    initial_delay=0,
    mutation={
        "Adam.lr": {"kind": "perturb", "min": 1e-7, "max": 1e-2},
        "PPOLoss.entropy_regularization": {"kind": "perturb", "min": 1e-4, "max": 0.1},
    },
)
