"""SAC on Pendulum-v1: alf vs Stable-Baselines3, same hyperparameters.

    python -m benchmarks.sac_pendulum [--seeds 0 1 2 3 4] [--turn_s 5]
    python -m benchmarks.sac_pendulum --steady_updates 1000 --repeats 5 [--with_sb3_ftz]
    python -m benchmarks.sac_pendulum --report_only

alf trains ``alf/examples/sac_pendulum_conf.py``, SB3 rl-baselines3-zoo's Pendulum-v1 entry
(SB3 SAC defaults + lr 1e-3: batch 256, gamma 0.99, tau 0.005, 256x256 ReLU actor and twin
critics, entropy tuned from α = 1 towards -1, 100 steps before the first update), 20,000 env
steps; both evaluate 10 deterministic episodes every 2,000 env steps. What is measured:
``benchmarks/harness/sac.py``.
"""

from benchmarks.harness.sac import SB3_SAC_DEFAULTS, SacTask, main

TASK = SacTask(
    name="sac_pendulum",
    env_name="Pendulum-v1",
    conf="alf/examples/sac_pendulum_conf.py",
    env_steps=20_000,
    eval_interval=2_000,
    num_eval_episodes=10,
    learning_starts=100,
    sb3_hyperparameters=dict(SB3_SAC_DEFAULTS, learning_rate=1e-3, learning_starts=100),
    seeds=(0, 1, 2, 3, 4),
    steady_starts=100,
    threshold=-200.0,
)

if __name__ == "__main__":
    main(TASK, __doc__)
