"""SAC on Pendulum-v1 (one env in the main process, one gradient step per env step).

Hyperparameters are Stable-Baselines3's SAC defaults (``sac_sb3_conf.py``) with
rl-baselines3-zoo's Pendulum-v1 entry (which only sets ``learning_rate: 1e-3`` and
20,000 steps), so the two can be compared directly
(``python -m benchmarks.vs_sb3 --task sac_pendulum``):
256x256 ReLU actor and twin critics, Adam lr 1e-3 for actor, critics and α, batch 256,
gamma 0.99, tau 0.005, automatic entropy tuning from α = 1 with target entropy -dim(A) =
-1, 100 steps before the first update (SB3's ``learning_starts``). The replay buffer
holds 100,000 steps instead of SB3's 1e6: the run only has 20,000. Typical result: eval
AverageReturn around -150 after 10-20k steps.
"""

import alf
from alf.optimizers import Adam

alf.import_config("sac_sb3_conf.py")

alf.config("create_environment", env_name="Pendulum-v1")
lr = 1e-3
alf.config(
    "SacAlgorithm",
    actor_optimizer=Adam(lr=lr, name="actor_adam"),
    critic_optimizer=Adam(lr=lr, name="critic_adam"),
    alpha_optimizer=Adam(lr=lr, name="alpha_adam"),
)
alf.config(
    "TrainerConfig",
    replay_buffer_length=100_000,
    num_env_steps=20_000,
    eval_interval=2000,
    num_eval_episodes=10,
    num_eval_environments=10,
    num_checkpoints=2,
)
