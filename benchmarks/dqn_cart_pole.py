"""DQN on CartPole-v1: env steps until eval AverageReturn >= 475, alf vs Stable-Baselines3.

    python benchmarks/dqn_cart_pole.py [--seeds 0 1 2] [--max_env_steps 50000]

For each seed, alf (``alf/examples/dqn_cart_pole_conf.py``) and then SB3's ``DQN``
train in a fresh subprocess each, alternating, so the noise of a shared machine
falls on both. Both use rl-baselines3-zoo's CartPole-v1 DQN hyperparameters (the
conf's docstring maps them onto alf's knobs; SB3's DQN is Nature DQN, so the
conf sets ``double_dqn=False``) and one torch thread (alf's default; SB3 via
``torch.set_num_threads(1)``).

Evaluation: 10 deterministic (greedy) episodes on a separate env every 2,500 env
steps, rounded up to the next training boundary (both frameworks collect 256
steps, then make 128 updates, so an evaluation between boundaries would only
see the policy of the previous boundary): at 2,560, 5,120, 7,680, 10,240,
12,544, ... env steps. A run stops at its first evaluation with AverageReturn
>= 475 or at ``--max_env_steps`` (the zoo's budget, 5e4). alf runs its
``DqnAlgorithm`` from the conf in a loop like ``PolicyTrainer._train`` (progress
updates, ``train_iter``) without summaries or checkpoints; SB3 evaluates in a
callback at the start of each rollout, i.e. right after the previous training
phase.

Results: ``benchmarks/results/dqn_cart_pole.json`` and the section
"## DQN CartPole-v1: steps to 475 (issue 4)" of ``benchmarks/RESULTS.md``
(other sections are kept).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

from ppo_bench_utils import cpu_model

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS_MD = os.path.join(HERE, "RESULTS.md")
RESULTS_JSON = os.path.join(HERE, "results", "dqn_cart_pole.json")
HE_INIT_JSON = os.path.join(HERE, "results", "dqn_cart_pole_he_init.json")
HEADING = "## DQN CartPole-v1: steps to 475 (issue 4)"
CONF = "alf/examples/dqn_cart_pole_conf.py"
THRESHOLD = 475.0
EVAL_EVERY = 2_500
TRAIN_FREQ = 256
NUM_EVAL_EPISODES = 10

SB3_DQN = dict(
    learning_rate=2.3e-3,
    batch_size=64,
    buffer_size=100_000,
    learning_starts=1000,
    gamma=0.99,
    target_update_interval=10,
    train_freq=TRAIN_FREQ,
    gradient_steps=128,
    exploration_fraction=0.16,
    exploration_final_eps=0.04,
    policy_kwargs=dict(net_arch=[256, 256]),
)


def eval_points(max_env_steps: int) -> list[int]:
    """Env steps at which both frameworks evaluate (see the module docstring)."""
    points = []
    k = 1
    while True:
        step = math.ceil(k * EVAL_EVERY / TRAIN_FREQ) * TRAIN_FREQ
        if step > max_env_steps:
            return points
        points.append(step)
        k += 1


class _Clock:
    """Wall time since the worker started, and time spent evaluating."""

    def __init__(self):
        self.start = time.time()
        self.eval_s = 0.0
        self.evals = []

    def evaluate(self, env_steps: int, fn) -> float:
        start = time.time()
        value = float(fn())
        self.eval_s += time.time() - start
        self.evals.append({"env_steps": env_steps, "return": value, "train_s": self.train_s()})
        print(f"  {env_steps:6d} steps: eval {value:6.1f}", flush=True)
        return value

    def train_s(self) -> float:
        return time.time() - self.start - self.eval_s


def run_alf_worker(seed: int, max_env_steps: int, conf: str = CONF) -> dict:
    import torch

    torch.set_num_threads(1)
    from alf.algorithms.config import TrainerConfig
    from alf.environments.utils import create_environment
    from alf.trainers.evaluator import Evaluator
    from alf.trainers.policy_trainer import create_algorithm
    from alf.utils import seeding
    from alf.utils.common import parse_conf_file
    from alf.utils.schedulers import update_progress

    clock = _Clock()
    parse_conf_file(
        os.path.join(REPO, conf), conf_params=[f"TrainerConfig.num_env_steps={max_env_steps}"]
    )
    config = TrainerConfig(random_seed=seed)
    seeding.set_random_seed(seed)
    env = create_environment(seed=seed)
    eval_seed = seeding.derived_seed(seed, 999)
    eval_env = create_environment(num_parallel_environments=1, nonparallel=True, seed=eval_seed)
    algorithm = create_algorithm(config, env)
    evaluator = Evaluator(algorithm, eval_env, NUM_EVAL_EPISODES, seed=eval_seed)
    points = eval_points(max_env_steps)
    env_steps = iteration = 0
    try:
        while env_steps < max_env_steps and points:
            update_progress(iteration, env_steps, env_steps / max_env_steps)
            env_steps += algorithm.train_iter()
            iteration += 1
            if env_steps < points[0]:
                continue
            while points and points[0] <= env_steps:
                points.pop(0)
            value = clock.evaluate(
                env_steps, lambda: torch.as_tensor(evaluator.evaluate().average_return)
            )
            if value >= THRESHOLD:
                break
    finally:
        env.close()
        eval_env.close()
    return _result(clock, env_steps)


def run_sb3_worker(seed: int, max_env_steps: int) -> dict:
    import gymnasium as gym
    import torch
    from stable_baselines3 import DQN
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    torch.set_num_threads(1)
    clock = _Clock()
    eval_env = Monitor(gym.make("CartPole-v1"))
    eval_env.reset(seed=seed + 999)
    points = eval_points(max_env_steps)

    class EvalAtRolloutStart(BaseCallback):
        """Evaluates right after a training phase; stops at the threshold."""

        stop = False

        def _on_rollout_start(self) -> None:
            steps = self.model.num_timesteps
            if not points or steps < points[0]:
                return
            while points and points[0] <= steps:
                points.pop(0)
            value = clock.evaluate(
                steps,
                lambda: evaluate_policy(
                    self.model, eval_env, n_eval_episodes=NUM_EVAL_EPISODES, deterministic=True
                )[0],
            )
            self.stop = value >= THRESHOLD

        def _on_step(self) -> bool:
            return not self.stop

    model = DQN("MlpPolicy", gym.make("CartPole-v1"), seed=seed, device="cpu", **SB3_DQN)
    callback = EvalAtRolloutStart()
    # One more rollout than the budget so that the evaluation at the budget runs.
    model.learn(total_timesteps=max_env_steps + TRAIN_FREQ, callback=callback)
    return _result(clock, int(model.num_timesteps))


def _result(clock: _Clock, env_steps: int) -> dict:
    reached = [e for e in clock.evals if e["return"] >= THRESHOLD]
    return {
        "env_steps": env_steps,
        "wall_s": time.time() - clock.start,
        "eval_s": clock.eval_s,
        "steps_to_threshold": reached[0]["env_steps"] if reached else None,
        "train_s_to_threshold": reached[0]["train_s"] if reached else None,
        "evals": clock.evals,
    }


# -- driver -----------------------------------------------------------------------------


def run_worker_process(framework: str, seed: int, max_env_steps: int, work_dir: str) -> dict:
    out = os.path.join(work_dir, f"{framework}_{seed}.json")
    log = os.path.join(work_dir, f"{framework}_{seed}.log")
    cmd = [sys.executable, __file__, "--worker", framework, "--seed", str(seed)]
    cmd += ["--max_env_steps", str(max_env_steps), "--out", out]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    print(f"{framework} seed {seed} ...", flush=True)
    with open(log, "w") as f:
        subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=True, env=env, cwd=REPO)
    with open(out) as f:
        result = json.load(f)
    result.update(framework=framework, seed=seed)
    print(f"{framework} seed {seed}: steps to {THRESHOLD:g}: {result['steps_to_threshold']}")
    return result


def machine() -> dict:
    import gymnasium
    import stable_baselines3
    import torch

    return {
        "cpu": cpu_model(),
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "gymnasium": gymnasium.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "load_start": [round(x, 2) for x in os.getloadavg()],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def _fmt(value, digits=0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _tables(runs: list[dict]) -> str:
    """Per-run table and per-framework summary."""
    rows = []
    for r in runs:
        train_s = r["wall_s"] - r["eval_s"]
        rows.append(
            f"| {r['framework']} | {r['seed']} | {_fmt(r['steps_to_threshold'])} | "
            f"{_fmt(r['train_s_to_threshold'], 1)} | {_fmt(r['env_steps'])} | "
            f"{_fmt(train_s, 1)} | {_fmt(r['env_steps'] / max(train_s, 1e-9))} | "
            f"{_fmt(max(e['return'] for e in r['evals']) if r['evals'] else None, 1)} |"
        )
    summary = []
    for fw in ("alf", "sb3"):
        mine = [r for r in runs if r["framework"] == fw]
        steps = [r["steps_to_threshold"] for r in mine]
        reached = sum(s is not None for s in steps)
        capped = [s if s is not None else math.inf for s in steps]
        med = statistics.median(capped) if capped else None
        summary.append(
            f"| {fw} | {reached}/{len(mine)} | "
            f"{'> budget' if med == math.inf else _fmt(med)} | "
            f"{_fmt(_median([r['train_s_to_threshold'] for r in mine]), 1)} | "
            f"{_fmt(_median([r['env_steps'] / (r['wall_s'] - r['eval_s']) for r in mine]))} |"
        )
    return f"""
| framework | seed | steps to ≥{THRESHOLD:g} | train s to ≥{THRESHOLD:g} | env steps run \
| train s | env steps/s (train) | best eval |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

| framework | seeds reaching ≥{THRESHOLD:g} | median steps to ≥{THRESHOLD:g} (unreached = ∞) \
| median train s to ≥{THRESHOLD:g} (reached runs) | median env steps/s |
|---|---|---|---|---|
{chr(10).join(summary)}
"""


def _side_runs() -> str:
    """The earlier run with alf's default (He) init, if its JSON is there."""
    if not os.path.exists(HE_INIT_JSON):
        return ""
    with open(HE_INIT_JSON) as f:
        side = json.load(f)
    return f"""
Side run, same protocol, with alf's default He (variance-scaling) init instead of
torch's (`{side["command"]}`, {side["machine"]["date"]}; raw data
`benchmarks/results/dqn_cart_pole_he_init.json`). alf reached ≥{THRESHOLD:g} on 1 of 3
seeds; rerunning only alf's seeds with torch's init gave 3 of 3 (30,208 / 35,072 /
42,752 steps: the same as in the table above, as alf runs are deterministic per seed),
hence the conf's init. That run's alf also predates a change that halved the work of
alf's DQN update (the online network with gradient on the trained row only), so its
steps/s are not comparable; its learning is (same math).
{_tables(side["runs"])}"""


def markdown(record: dict) -> str:
    info = record["machine"]
    return f"""
- Date: {info["date"]}; machine: {info["cpu"]}, `nproc` = {info["nproc"]}, load average at
  start {info["load_start"]}, at end {record.get("load_end")} (shared, noisy machine; alf and
  SB3 alternate per seed). Python {info["python"]}, torch {info["torch"]}, gymnasium
  {info["gymnasium"]}, stable-baselines3 {info["stable_baselines3"]}.
- **One torch thread for both** (alf's `TrainerConfig.num_threads` default; SB3 with
  `torch.set_num_threads(1)`).
- Command: `{record["command"]}`.
- Both: rl-baselines3-zoo CartPole-v1 DQN hyperparameters (lr 2.3e-3, batch 64, buffer
  100k, learning_starts 1000, gamma 0.99, target_update_interval 10 (= one hard copy per
  training phase), train_freq 256, gradient_steps 128, exploration_fraction 0.16,
  exploration_final_eps 0.04, net [256, 256], Huber loss, max_grad_norm 10, Nature DQN
  target), 1 env, budget {record["max_env_steps"]:,} env steps (the zoo's). alf: `{CONF}`
  as is; it sets torch's default `nn.Linear` weight init, SB3's (alf's own default is He
  init: see the side run below).
- Eval: {NUM_EVAL_EPISODES} deterministic episodes on a separate env every 2,500 env steps
  rounded up to the next 256-step training boundary (2,560, 5,120, 7,680, ...); a run stops
  at its first eval ≥ {THRESHOLD:g}. "steps to ≥{THRESHOLD:g}" is that eval's env-step count
  (— : not within the budget); "train s" excludes evaluation time.
- Raw data: `benchmarks/results/dqn_cart_pole.json`.

{_tables(record["runs"])}{_side_runs()}"""


def replace_section(body: str) -> None:
    """Write ``HEADING`` + ``body`` into RESULTS.md, replacing only our own section."""
    text = "# Benchmark results\n"
    if os.path.exists(RESULTS_MD):
        with open(RESULTS_MD) as f:
            text = f.read()
    section = f"{HEADING}\n{body.rstrip()}\n"
    start = text.find(HEADING)
    if start < 0:
        text = text.rstrip() + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(HEADING))
        text = text[:start] + section + ("" if end < 0 else text[end:])
    with open(RESULTS_MD, "w") as f:
        f.write(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max_env_steps", type=int, default=50_000)
    parser.add_argument("--work_dir", default="/tmp/dqn_cart_pole_bench")
    parser.add_argument("--no_write", action="store_true", help="leave RESULTS.md alone")
    parser.add_argument("--worker", choices=["alf", "sb3"], help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--alf_conf", default=CONF, help="alf worker: another conf (side runs)")
    args = parser.parse_args()
    if args.worker == "alf":
        result = run_alf_worker(args.seed, args.max_env_steps, args.alf_conf)
    elif args.worker == "sb3":
        result = run_sb3_worker(args.seed, args.max_env_steps)
    if args.worker:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        return
    os.makedirs(args.work_dir, exist_ok=True)
    record = {
        "command": "python benchmarks/dqn_cart_pole.py " + " ".join(sys.argv[1:]),
        "machine": machine(),
        "max_env_steps": args.max_env_steps,
        "sb3_dqn": SB3_DQN,
        "runs": [],
    }
    for seed in args.seeds:
        for framework in ("alf", "sb3"):
            record["runs"].append(
                run_worker_process(framework, seed, args.max_env_steps, args.work_dir)
            )
            record["load_end"] = [round(x, 2) for x in os.getloadavg()]
            os.makedirs(os.path.dirname(RESULTS_JSON), exist_ok=True)
            with open(RESULTS_JSON, "w") as f:
                json.dump(record, f, indent=1)
            if not args.no_write:
                replace_section(markdown(record))
    print(markdown(record))


if __name__ == "__main__":
    main()
