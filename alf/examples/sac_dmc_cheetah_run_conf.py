"""SAC on the DeepMind Control Suite's ``cheetah:run`` from states (``pip install -e '.[dmc]'``).

The protocol of ALF's dm_control benchmarks: the flattened state (17 numbers), action repeat
2 (``suite_dmc.load(frame_skip=2)``) and 500 agent steps an episode (1000 control steps, a
LAST with discount 1), 256x256 ReLU actor and twin critics, Adam lr 3e-4, batch 256,
Polyak tau 0.005, automatic entropy tuning, 10,000 random steps first, replay buffer 1e5.
Everything else is Stable-Baselines3's SAC (``sac_sb3_conf.py``): gamma 0.99, one gradient
step per agent step, one env in the main process.

Switch the task with ``--conf_param "create_environment.env_name='walker:walk'"`` (any
``domain:task`` of ``dm_control.suite.ALL_TASKS``).
"""

import alf
from alf.environments import suite_dmc

alf.import_config("sac_sb3_conf.py")

alf.config("create_environment", env_name="cheetah:run", env_load_fn=suite_dmc.load)
alf.config("suite_dmc.load", from_pixels=False, frame_skip=2, max_episode_steps=500)
alf.config(
    "TrainerConfig",
    initial_collect_steps=10_000,
    replay_buffer_length=100_000,
    num_env_steps=500_000,
    eval_interval=10_000,
    num_eval_episodes=5,
    num_eval_environments=5,
    num_checkpoints=5,
)
