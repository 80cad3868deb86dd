"""SAC on HalfCheetah-v5: alf vs Stable-Baselines3, same hyperparameters.

    python -m benchmarks.sac_halfcheetah [--seeds 0 1 2] [--turn_s 5] [--report_only]
    python -m benchmarks.sac_halfcheetah --steady 1000 --repeats 5 [--with_sb3_ftz]

alf trains ``alf/examples/sac_halfcheetah_conf.py``, SB3 rl-baselines3-zoo's MuJoCo SAC entry;
both evaluate 5 deterministic episodes every 10,000 env steps. The steady-state A/B lowers
``learning_starts`` to 1,000 for both.
"""

from benchmarks.harness.vs_sb3 import SB3_SAC_DEFAULTS, Task, main

TASK = Task(
    name="sac_halfcheetah",
    algorithm="sac",
    env_name="HalfCheetah-v5",
    conf="alf/examples/sac_halfcheetah_conf.py",
    env_steps=100_000,
    eval_every=10_000,
    seeds=(0, 1, 2),
    sb3=dict(SB3_SAC_DEFAULTS, learning_starts=10_000),
    num_eval_episodes=5,
    learning_starts=10_000,
    steady_starts=1_000,
)

if __name__ == "__main__":
    main(TASK, __doc__)
