"""SAC on HalfCheetah-v5: alf vs Stable-Baselines3, same hyperparameters, alternating runs.

    python benchmarks/sac_halfcheetah.py --seeds 0 1 2 --work_dir /tmp/sac_hc_bench
    python benchmarks/sac_halfcheetah.py --steady_updates 1000 --repeats 3

For every seed, alf (``python -m alf.bin.train`` on ``alf/examples/sac_halfcheetah_conf.py``)
and then SB3 (this script with ``--worker sb3``) train in fresh subprocesses for
100,000 env steps (issue 4): one env, one gradient step per env step,
rl-baselines3-zoo's MuJoCo SAC entry (SB3 SAC defaults + ``learning_starts: 10000``:
lr 3e-4 for actor, critics and α, batch 256, gamma 0.99, tau 0.005, replay buffer 1e6,
256x256 ReLU actor and twin critics, automatic entropy tuning from α = 1 with target
entropy -dim(A) = -6). One torch thread each. Every 10,000 env steps 5 deterministic
episodes are evaluated on separate envs (alf: 5 envs in the main process, the conf's
setting; SB3: one env, ``evaluate_policy``); evaluation time is measured and excluded
from throughput. ``--steady_updates`` A/B runs lower ``learning_starts`` to 1,000 for
both frameworks to shorten their warm-up. See ``sac_bench.py`` for what is measured.
Raw results: ``benchmarks/results/sac_halfcheetah.json``; summary: the section
"## SAC HalfCheetah-v5: alf vs Stable-Baselines3 (issue 4)" of ``benchmarks/RESULTS.md``
(rewritten after every run; other sections are kept).
"""

from __future__ import annotations

from sac_bench import SB3_SAC_DEFAULTS, SacTask, main

LEARNING_STARTS = 10_000
TASK = SacTask(
    name="sac_halfcheetah",
    script="benchmarks/sac_halfcheetah.py",
    heading="## SAC HalfCheetah-v5: alf vs Stable-Baselines3 (issue 4)",
    env_name="HalfCheetah-v5",
    conf="alf/examples/sac_halfcheetah_conf.py",
    env_steps=100_000,
    eval_interval=10_000,
    num_eval_episodes=5,
    learning_starts=LEARNING_STARTS,
    steady_learning_starts=1_000,
    sb3_hyperparameters=dict(SB3_SAC_DEFAULTS, learning_starts=LEARNING_STARTS),
    setup_text="""\
- Code measured: alf commit `{alf_commit}` (branch `bench-sac-hc`); the subprocesses import
  `{alf_module}` (run with `cwd` and `PYTHONPATH` set to this checkout).
- Both: rl-baselines3-zoo HalfCheetah-v5 SAC = SB3 SAC defaults + learning_starts
  {learning_starts:,} (Adam lr 3e-4 for actor, critics and α, batch 256, gamma 0.99, tau
  0.005 every step, replay buffer 1e6, 256x256 ReLU actor and twin critics, tanh-squashed
  Gaussian with log-std clipped to [-20, 2], α learned as log α from α = 1 with target
  entropy -dim(A) = -6, 1 env, 1 gradient step per env step, time-limit truncations
  bootstrapped), {env_steps:,} env steps; eval = {num_eval_episodes} deterministic
  episodes on separate envs every {eval_interval:,} env steps (alf: {num_eval_episodes}
  envs in the main process; SB3: one env, `evaluate_policy`), timed and excluded from
  throughput. alf runs the CLI on `alf/examples/sac_halfcheetah_conf.py` unchanged except
  `--conf_param TrainerConfig.num_env_steps={env_steps}` and
  `TrainerConfig.num_checkpoints=1` (only the final checkpoint: a mid-run checkpoint
  restarts the env); the conf initializes every layer with PyTorch's default `nn.Linear`
  init, as SB3 does; its other values (eval every {eval_interval:,} steps,
  {num_eval_episodes} episodes, `initial_collect_steps={learning_starts}`) are also passed
  explicitly, equal to the conf's.
- Differences that remain: **warm-up actions** (SB3 takes uniform random actions for its
  first `learning_starts` steps; alf collects its `initial_collect_steps` with the untrained
  stochastic policy, the conf keeps `SacAlgorithm.random_initial_collect=False`, ALF's
  behaviour); **subnormal floats**: alf flushes them to zero
  (`TrainerConfig.flush_denormal`, on by default), SB3 runs with torch's default (computes
  on them, slower on x86); **update order** (SB3 steps α, then the critics, then the actor
  against the just-updated critics; alf sums the three losses into one backward pass on the
  pre-update critics); alf's Adam uses torch's fused kernel, SB3's the default one; alf's
  updates count is SB3's + 1 (alf trains on the step that fills `initial_collect_steps`, SB3
  from the next one). alf also writes a "best" checkpoint after each eval that improves on
  the best so far (the conf's default), counted in its training time.""",
)

if __name__ == "__main__":
    main(TASK, __doc__, default_seeds=[0, 1, 2])
