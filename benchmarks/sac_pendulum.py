"""SAC on Pendulum-v1: alf vs Stable-Baselines3, same hyperparameters.

    python -m benchmarks.sac_pendulum [--seeds 0 1 2 3 4] [--turn_s 5] [--report_only]
    python -m benchmarks.sac_pendulum --steady 1000 --repeats 5 [--with_sb3_ftz]

alf trains ``alf/examples/sac_pendulum_conf.py``, SB3 rl-baselines3-zoo's Pendulum-v1 entry;
both evaluate 10 deterministic episodes every 2,000 env steps.
"""

from benchmarks.harness.vs_sb3 import SB3_SAC_DEFAULTS, Task, main

TASK = Task(
    name="sac_pendulum",
    algorithm="sac",
    env_name="Pendulum-v1",
    conf="alf/examples/sac_pendulum_conf.py",
    env_steps=20_000,
    eval_every=2_000,
    seeds=(0, 1, 2, 3, 4),
    sb3=dict(SB3_SAC_DEFAULTS, learning_rate=1e-3, learning_starts=100),
    threshold=-200.0,
    learning_starts=100,
    steady_starts=100,
)

if __name__ == "__main__":
    main(TASK, __doc__)
