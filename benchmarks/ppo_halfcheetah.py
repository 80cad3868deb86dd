"""PPO on HalfCheetah-v5: alf vs Stable-Baselines3, same hyperparameters, same run.

    python benchmarks/ppo_halfcheetah.py [--seeds 0 1 2] [--quick] [--num_threads 1]

For each seed, alf (``python -m alf.bin.train --conf
benchmarks/confs/ppo_halfcheetah_bench_conf.py``) and then SB3 (``sb3_ppo_worker.py``)
train in a fresh subprocess each, alternating. Hyperparameters are rl-baselines3-zoo's
tuned HalfCheetah PPO entry without observation/reward normalization (alf has no
normalizer yet); the conf's docstring lists every deviation. 200k env steps, 1 env,
evaluation of 10 deterministic episodes on 10 separate envs every 20,480 env steps
and at the end, the same torch thread count (``--num_threads``, default 1 as alf's).
See ``ppo_bench_utils.py`` for what is measured.

Results: ``benchmarks/results/ppo_halfcheetah.json`` and the section
"## PPO HalfCheetah-v5: alf vs Stable-Baselines3 (issue 3)" of ``benchmarks/RESULTS.md``
(updated after every seed; other sections are kept). ``--quick`` (1 seed, 20k steps)
or ``--num_threads`` other than 1 write a suffixed JSON only.
"""

from __future__ import annotations

import argparse

import ppo_bench_utils as bench

NAME = "ppo_halfcheetah"
HEADING = "## PPO HalfCheetah-v5: alf vs Stable-Baselines3 (issue 3)"
CONF = "benchmarks/confs/ppo_halfcheetah_bench_conf.py"
UNROLL_LENGTH = 512
EVAL_INTERVAL = 40  # iterations; x 512 steps = every 20,480 env steps

SB3_PPO = {
    "policy": "MlpPolicy",
    "n_steps": UNROLL_LENGTH,
    "batch_size": 64,
    "n_epochs": 20,
    "gamma": 0.98,
    "gae_lambda": 0.92,
    "learning_rate": 2.0633e-05,
    "clip_range": 0.1,
    "ent_coef": 0.000401762,
    "vf_coef": 0.58096,
    "max_grad_norm": 0.8,
    "policy_kwargs": {
        "log_std_init": -2.0,
        "ortho_init": False,
        "activation_fn": "ReLU",
        "net_arch": {"pi": [256, 256], "vf": [256, 256]},
    },
}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench.add_common_args(parser, default_seeds=[0], full_steps=200_000)
    args = bench.finish_args(parser.parse_args(), NAME, full_steps=200_000)
    args.eval_interval = 10 if args.quick else EVAL_INTERVAL
    return args


def new_record(args) -> dict:
    sb3_spec = {
        "env_name": "HalfCheetah-v5",
        "num_envs": 1,
        "num_env_steps": args.num_env_steps,
        "eval_every": args.eval_interval * UNROLL_LENGTH,
        "num_eval_episodes": 10,
        "num_eval_envs": 10,
        "torch_num_threads": args.num_threads,
        "ppo": SB3_PPO,
    }
    alf_conf_params = [
        f"TrainerConfig.num_env_steps={args.num_env_steps}",
        f"TrainerConfig.eval_interval={args.eval_interval}",
    ]
    return bench.new_record(
        args,
        NAME,
        eval_every=args.eval_interval * UNROLL_LENGTH,
        alf_conf=CONF,
        alf_conf_params=alf_conf_params,
        sb3_spec=sb3_spec,
    )


def report(args, record: dict, refresh: bool = True) -> None:
    """Summarize the runs so far into the JSON and (unless --no_write) RESULTS.md.

    ``refresh``: stamp the current load and date as the last update.
    """
    if refresh:
        record["load_end"] = bench.load_average()
        record["end_date"] = bench.now()
    record["summary"] = bench.summarize(record["runs"], None)
    text = markdown(record)  # also reads each run's update statistics into the record
    bench.write_json(args.json_path, record)
    if not args.no_write:
        bench.replace_section(HEADING, text)


def markdown(record: dict) -> str:
    runs, summary, machine = record["runs"], record["summary"], record["machine"]
    ratios = summary["alf_over_sb3"]
    return f"""
- Date: {machine["date"]} (start) — {record["end_date"]} (last update)
- Machine: {machine["cpu"]}, `nproc` = {machine["nproc"]}; load average (1/5/15 min) at
  start {record["load_start"]}, at last update {record["load_end"]}. **The machine is
  shared and noisy** (other engineers' jobs and the CartPole benchmark above ran at the
  same time); runs alternate alf / SB3 per seed so the noise falls on both.
- Software: alf {machine.get("alf", "(commit not recorded)")}, Python {machine["python"]},
  torch {machine["torch"]}, gymnasium
  {machine["gymnasium"]}, stable-baselines3 {machine["stable_baselines3"]}, mujoco;
  {bench.threads_text(record)}.
- Command: `{record["command"]}`
- Both: rl-baselines3-zoo's tuned HalfCheetah PPO hyperparameters — 1 env, n_steps 512,
  batch 64, 20 epochs, gamma 0.98, λ 0.92, lr 2.0633e-5 (constant), clip 0.1, ent
  0.000401762, vf 0.58096, grad norm 0.8, Adam eps 1e-5, separate 256x256 ReLU actor and
  critic, state-independent log std initialized to −2, actions clipped into the bounds
  when stepping — for {record["num_env_steps"]:,} env steps; eval = 10 deterministic
  episodes on 10 separate envs every {record["eval_every"]:,} env steps and at the end.
- Deviations from the zoo entry (both sides): **no VecNormalize** (the zoo normalizes
  observations and rewards; alf has no normalizer yet), HalfCheetah-v5 instead of v3,
  {record["num_env_steps"]:,} instead of 1M steps — so returns are far below the zoo's
  and only comparable between the two columns here. Remaining framework differences:
  bias initialization (weights: PyTorch's default init on both sides, output layers
  included; biases: SB3 PyTorch's default uniform, alf 0), and alf writes its 5
  checkpoints (not subtracted). alf conf: `{CONF}`.
- Columns as in the CartPole section (no start-up estimate: the 20,480-step intervals
  are too noisy for it); raw data: `benchmarks/results/{NAME}.json`.
{bench.notes_text(record)}
Per run:

{bench.per_run_table(runs, None, startup=False)}

Medians and ratios (alf / SB3; throughput > 1 and time < 1 favour alf):

{bench.medians_table(summary, None, startup=False)}

{bench.paired_text(summary)}

alf trains at {bench.fmt(ratios["steps_per_sec"], 2)}× SB3's env steps/s (wall − eval);
final eval return alf {bench.fmt(summary["alf"]["final_return"])} vs SB3
{bench.fmt(summary["sb3"]["final_return"])}.

Eval AverageReturn by env steps:

{bench.eval_curves_table(runs)}

PPO update diagnostics (approx KL = mean of (ρ − 1) − log ρ; clip fraction averaged over
all {SB3_PPO["n_epochs"]} × 8 minibatches of an iteration, for both; approx KL: alf
averages it over all minibatches of the iteration, SB3 logs the mean over the last
epoch only, which is larger since the policy moves further with each epoch), median
over iterations (alf: its summary iterations, every 10th; SB3: every iteration; empty
when the run's files are gone):

{bench.update_stats_table(runs, SB3_PPO["n_epochs"])}
"""


def main() -> None:
    bench.main(parse_args(), new_record, report, markdown)


if __name__ == "__main__":
    main()
