"""PPO on HalfCheetah-v5 with the zoo's normalization: alf vs Stable-Baselines3.

    python -m benchmarks.ppo_halfcheetah_zoo [--seeds 0 1 2 3 4] [--turn_s S] [--report_only]

``benchmarks.ppo_halfcheetah`` with rl-baselines3-zoo's ``normalize: true`` on both sides: SB3
trains in ``VecNormalize`` (its defaults, gamma 0.98) and evaluates with the statistics frozen
and raw rewards; alf trains ``benchmarks/confs/ppo_halfcheetah_zoo_conf.py`` (its docstring says
how its normalizers follow VecNormalize). Both evaluate 10 deterministic episodes every 20,480 env
steps and at the end.
"""

import dataclasses

from benchmarks.harness.vs_sb3 import main
from benchmarks.ppo_halfcheetah import TASK as PLAIN

TASK = dataclasses.replace(
    PLAIN,
    name="ppo_halfcheetah_zoo",
    conf="benchmarks/confs/ppo_halfcheetah_zoo_conf.py",
    seeds=(0, 1, 2, 3, 4),
    normalize=True,
)

if __name__ == "__main__":
    main(TASK, __doc__)
