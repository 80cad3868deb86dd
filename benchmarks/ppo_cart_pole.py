"""PPO on CartPole-v1: alf vs Stable-Baselines3, same hyperparameters, same machine, same run.

    python benchmarks/ppo_cart_pole.py [--seeds 0 1 2 3 4] [--quick] [--num_threads 1]

For each seed, alf (``python -m alf.bin.train --conf alf/examples/ppo_cart_pole_conf.py``)
and then SB3 (``sb3_ppo_worker.py``) train in a fresh subprocess each, alternating,
so the noise of a shared machine falls on both. Both use rl-baselines3-zoo's tuned
CartPole-v1 hyperparameters (8 envs stepped in-process, n_steps 32, batch 256,
20 epochs, gamma 0.98, GAE lambda 0.8, lr and clip range linear from 1e-3 / 0.2 to 0,
no entropy bonus, vf_coef 0.5, max_grad_norm 0.5, Adam eps 1e-5, 64x64 tanh actor
and critic, 100k env steps), the same torch thread count (``--num_threads``, 1 by
default as in alf's ``TrainerConfig``), and the same evaluation:
10 deterministic episodes on 10 separate envs every 5,120 env steps and at the end.
See ``ppo_bench_utils.py`` for what is measured.

Results: ``benchmarks/results/ppo_cart_pole.json`` and the section
"## PPO CartPole-v1: alf vs Stable-Baselines3 (issue 3)" of ``benchmarks/RESULTS.md``
(other sections are kept). ``--quick`` (1 seed, 20k steps) is a smoke run and
``--num_threads N`` other than 1 a side comparison: both write a suffixed JSON
(``results/ppo_cart_pole_quick.json``, ``..._threads0.json``) and leave RESULTS.md
alone; the section shows the ``_threads0`` run if it exists.
"""

from __future__ import annotations

import argparse
import json
import os

import ppo_bench_utils as bench

NAME = "ppo_cart_pole"
HEADING = "## PPO CartPole-v1: alf vs Stable-Baselines3 (issue 3)"
CONF = "alf/examples/ppo_cart_pole_conf.py"
THRESHOLD = 475.0
NUM_ENVS = 8
UNROLL_LENGTH = 32
EVAL_EVERY = 5_120  # env steps = alf's eval_interval (20 iterations) x 8 envs x 32 steps

SB3_PPO = {
    "policy": "MlpPolicy",  # 64x64 tanh, separate actor and critic (SB3's default)
    "n_steps": UNROLL_LENGTH,
    "batch_size": 256,
    "n_epochs": 20,
    "gamma": 0.98,
    "gae_lambda": 0.8,
    "learning_rate": {"linear": 1e-3},
    "clip_range": {"linear": 0.2},
    "ent_coef": 0.0,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench.add_common_args(parser, default_seeds=[0, 1, 2, 3, 4], full_steps=100_000)
    return bench.finish_args(parser.parse_args(), NAME, full_steps=100_000)


def new_record(args) -> dict:
    sb3_spec = {
        "env_name": "CartPole-v1",
        "num_envs": NUM_ENVS,
        "num_env_steps": args.num_env_steps,
        "eval_every": EVAL_EVERY,
        "num_eval_episodes": 10,
        "num_eval_envs": 10,
        "torch_num_threads": args.num_threads,
        "ppo": SB3_PPO,
    }
    return bench.new_record(
        args,
        NAME,
        threshold=THRESHOLD,
        alf_conf=CONF,
        # Only the budget is overridden; everything else is the example conf.
        alf_conf_params=[f"TrainerConfig.num_env_steps={args.num_env_steps}"],
        sb3_spec=sb3_spec,
    )


def report(args, record: dict, refresh: bool = True) -> None:
    """Summarize the runs so far into the JSON and (unless --no_write) RESULTS.md.

    ``refresh``: stamp the current load and date as the end of the run.
    """
    if refresh:
        record["load_end"] = bench.load_average()
        record["end_date"] = bench.now()
    record["summary"] = bench.summarize(record["runs"], THRESHOLD)
    bench.write_json(args.json_path, record)
    if not args.no_write:
        bench.replace_section(HEADING, markdown(record))


def markdown(record: dict) -> str:
    runs, summary, machine = record["runs"], record["summary"], record["machine"]
    alf_ok = summary["alf"]["num_reached"]
    num_alf = summary["alf"]["num_runs"]
    ratios = summary["alf_over_sb3"]
    return f"""
- Date: {machine["date"]} (start) — {record["end_date"]} (end)
- Machine: {machine["cpu"]}, `nproc` = {machine["nproc"]}; load average (1/5/15 min) at
  start {record["load_start"]}, at end {record["load_end"]}. **The machine is shared and
  noisy** (other engineers' jobs ran at the same time, including the HalfCheetah benchmark
  below), so absolute numbers move run to run; runs alternate alf / SB3 per seed so the
  noise falls on both.
- Software: alf {machine.get("alf", "(commit not recorded)")}, Python {machine["python"]},
  torch {machine["torch"]}, gymnasium
  {machine["gymnasium"]}, stable-baselines3 {machine["stable_baselines3"]};
  {bench.threads_text(record)}.
- Command: `{record["command"]}`
- Both: rl-baselines3-zoo CartPole-v1 hyperparameters ({NUM_ENVS} envs in-process,
  n_steps {UNROLL_LENGTH}, batch 256, 20 epochs, gamma 0.98, λ 0.8, lr lin 1e-3, clip lin
  0.2, ent 0, vf 0.5, grad norm 0.5, Adam eps 1e-5, 64x64 tanh), {record["num_env_steps"]:,}
  env steps, eval = 10 deterministic episodes on 10 separate envs every {EVAL_EVERY:,} env
  steps and at the end. alf runs the CLI on `{CONF}` as is (it also writes its 5 periodic
  checkpoints and a best-eval checkpoint; their time, from its log, is in `checkpoint_s` of
  the JSON and is *not* subtracted). Network initialization is each framework's own
  (SB3: orthogonal; alf: its initializers).
- "wall" is the subprocess's wall time (Python start-up and imports included for both);
  "wall − eval" subtracts the time spent evaluating; "steps/s" = env steps / (wall − eval).
  "steady steps/s" is measured identically for both from the eval timestamps: the median
  over the 5,120-step intervals between evaluations (wall − eval time; the first
  interval, which holds the process start-up, excluded); "start-up" is the time to the
  first evaluation minus what its steps take at the steady rate (imports, env and
  network construction). "own per-iteration steps/s": alf's `time/env_steps_per_sec`
  (written only on summary iterations, every 10th, which also do the summary work) and,
  for SB3, rollout + update time of every iteration. "time to ≥{THRESHOLD:g}" = wall −
  eval seconds from process start to the
  end of the first evaluation with AverageReturn ≥ {THRESHOLD:g}.
- Raw data: `benchmarks/results/{NAME}.json`.
{bench.notes_text(record)}
Per run:

{bench.per_run_table(runs, THRESHOLD)}

Medians and ratios (alf / SB3 of the medians; throughput > 1 and time < 1 favour alf):

{bench.medians_table(summary, THRESHOLD)}

{bench.paired_text(summary)}

alf reaches eval AverageReturn ≥ {THRESHOLD:g} within {record["num_env_steps"]:,} env steps
on **{alf_ok} of {num_alf}** seeds (target: ≥ 4 of 5) —
{"met" if alf_ok >= 4 else "NOT met"} (SB3: {summary["sb3"]["num_reached"]} of
{summary["sb3"]["num_runs"]}). Medians: alf runs at {bench.fmt(ratios["steps_per_sec"], 2)}×
SB3's env steps/s (wall − eval) and {bench.fmt(ratios["steady_steps_per_sec"], 2)}× its steady
rate, but needs {bench.fmt(ratios["steps_to_threshold"], 2)}× SB3's env steps and
{bench.fmt(ratios["time_to_threshold_s"], 2)}× its wall − eval time to first reach
≥ {THRESHOLD:g}.

Eval AverageReturn by env steps:

{bench.eval_curves_table(runs)}
{threads_check_markdown()}"""


def threads_check_markdown() -> str:
    """The ``--num_threads 0`` side run (torch's default threads for both), if saved."""
    path = os.path.join(bench.RESULTS_DIR, f"{NAME}_threads0.json")
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        side = json.load(f)
    return f"""
Thread-count check: the same comparison with torch's default thread count for both
(`{side["command"]}`, {side["machine"]["date"]}, load {side["load_start"]} →
{side.get("load_end")}; {bench.threads_text(side)}); the runs that completed (a run
stopped early is left out). On this loaded 2-core machine the second intra-op thread
mostly spins and waits, for both frameworks:

{bench.per_run_table(side["runs"], None)}
"""


def main() -> None:
    bench.main(parse_args(), new_record, report, markdown)


if __name__ == "__main__":
    main()
