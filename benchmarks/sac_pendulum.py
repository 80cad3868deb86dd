"""SAC on Pendulum-v1: alf vs Stable-Baselines3, same hyperparameters, alternating runs.

    python benchmarks/sac_pendulum.py --seeds 0 1 2 3 4 --work_dir /tmp/sac_bench

For every seed, alf (``python -m alf.bin.train`` on ``alf/examples/sac_pendulum_conf.py``)
and then SB3 (this script with ``--worker sb3``) train in fresh subprocesses for
20,000 env steps: one env, one gradient step per env step, rl-baselines3-zoo's
Pendulum-v1 hyperparameters (SB3 SAC defaults + lr 1e-3: batch 256, gamma 0.99,
tau 0.005, 256x256 ReLU actor and twin critics, automatic entropy tuning from
α = 1, target entropy -1, 100 steps before the first update). Both use one torch
thread (alf: ``TrainerConfig.num_threads`` = 1, its default; SB3:
``torch.set_num_threads(1)``). Every 2,000 env steps 10 deterministic episodes are
evaluated on a separate env (alf: 10 envs in the main process; SB3: one env,
``evaluate_policy``); evaluation time is measured and excluded from throughput.

Measured per run: ``wall_s`` (subprocess wall time, start-up included), ``eval_s``,
``train_s = wall_s - eval_s``, ``updates`` (gradient steps),
``updates_per_sec = updates / train_s``, ``steady_updates_per_sec`` (median over
the intervals between evaluations, which excludes start-up), the eval curve, the
final eval return and the first env step at which eval AverageReturn >= -200.
Raw results go to ``benchmarks/results/sac_pendulum.json`` and a summary into
``benchmarks/RESULTS.md`` (only this benchmark's ``##`` section is replaced).
"""

from __future__ import annotations

from sac_bench import SB3_SAC_DEFAULTS, SacTask, main

LEARNING_STARTS = 100
TASK = SacTask(
    name="sac_pendulum",
    script="benchmarks/sac_pendulum.py",
    heading="## SAC Pendulum-v1: alf vs Stable-Baselines3 (issue 4)",
    env_name="Pendulum-v1",
    conf="alf/examples/sac_pendulum_conf.py",
    env_steps=20_000,
    eval_interval=2_000,
    num_eval_episodes=10,
    learning_starts=LEARNING_STARTS,
    threshold=-200.0,
    sb3_hyperparameters=dict(SB3_SAC_DEFAULTS, learning_rate=1e-3, learning_starts=LEARNING_STARTS),
    setup_text="""\
- Both: rl-baselines3-zoo Pendulum-v1 SAC = SB3 SAC defaults + lr 1e-3 (batch 256, gamma
  0.99, tau 0.005, 256x256 ReLU actor and twin critics, Adam lr 1e-3 for actor, critics and
  α, α learned from 1 with target entropy -1, {learning_starts} steps before the first
  update, 1 env, 1 gradient step per env step), {env_steps:,} env steps; eval =
  {num_eval_episodes} deterministic episodes on separate envs every {eval_interval:,} env
  steps. alf runs the CLI on `alf/examples/sac_pendulum_conf.py` (replay buffer 100k vs
  SB3's 1e6: both hold all 20k steps) with only the final checkpoint (a mid-run checkpoint
  restarts the env). Network initialization is each framework's own. alf flushes
  subnormal floats to zero (`TrainerConfig.flush_denormal`, on by default); SB3 runs with
  torch's default.""",
)

if __name__ == "__main__":
    main(TASK, __doc__, default_seeds=[0, 1, 2, 3, 4])
