"""A seconds-long version of ``alf/examples/ppo_cart_pole_conf.py`` for CLI and trainer tests.

Same algorithm and networks, with fewer envs, a short unroll, one update per
iteration, and a 16-iteration run with a checkpoint and an evaluation every 4
iterations. The learning rate and clipping are constant: the example's schedules
decay with the training progress (``iteration / num_iterations``), so a run stopped
early by a smaller ``num_iterations`` would follow a different schedule than the
uninterrupted run, and the resume tests could not compare them.
"""

import alf
from alf.optimizers import Adam

alf.import_config("ppo_cart_pole_conf.py")

alf.config("create_environment", num_parallel_environments=2)
alf.config("PPOLoss", importance_ratio_clipping=0.2)
alf.config("PPOAlgorithm", optimizer=Adam(lr=1e-3, eps=1e-5, gradient_clipping=0.5))
alf.config(
    "TrainerConfig",
    unroll_length=16,
    mini_batch_size=32,
    num_updates_per_train_iter=1,
    num_env_steps=0,
    num_iterations=16,
    checkpoint_interval=4,
    eval_interval=4,
    num_eval_episodes=2,
    num_eval_environments=2,
    summary_interval=1,
    random_seed=1,
    progress_bar=False,
)
