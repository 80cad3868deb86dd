"""DQN on CartPole-v1: env steps until eval AverageReturn >= 475, alf vs Stable-Baselines3.

    python -m benchmarks.dqn_cart_pole [--seeds 0 1 2] [--max_env_steps 50000] [--report_only]

Per seed, alf (``alf/examples/dqn_cart_pole_conf.py``: rl-baselines3-zoo's hyperparameters)
and then SB3's ``DQN`` with the same ones train in fresh processes, one torch thread: 256
steps, then 128 updates; 10 greedy eval episodes every 2,500 env steps rounded up to a
training boundary, until the first eval >= 475 or ``--max_env_steps``. alf runs a loop like
``PolicyTrainer``'s without summaries or checkpoints; SB3 evaluates at the start of each rollout.
"""

from __future__ import annotations

import math
import os
import time
from functools import partial

from benchmarks.harness import cli, report, runner, sb3

NAME = "dqn_cart_pole"
CONF = "alf/examples/dqn_cart_pole_conf.py"
THRESHOLD = 475.0
TRAIN_FREQ = 256
SB3_DQN = dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000)
SB3_DQN.update(gamma=0.99, target_update_interval=10, train_freq=TRAIN_FREQ, gradient_steps=128)
SB3_DQN.update(exploration_fraction=0.16, exploration_final_eps=0.04)
SB3_DQN["policy_kwargs"] = dict(net_arch=[256, 256])


class Clock:
    """Evaluations at multiples of ``every`` env steps rounded up to a training boundary, up to
    ``max_env_steps``; time since start and time spent evaluating."""

    def __init__(self, max_env_steps: int, every: int = 2_500):
        self.start, self.eval_s, self.evals = time.time(), 0.0, []
        points = range(every, max_env_steps + every + 1, every)
        points = (math.ceil(p / TRAIN_FREQ) * TRAIN_FREQ for p in points)
        self.points = [p for p in points if p <= max_env_steps]

    def evaluate(self, env_steps: int, average_return) -> bool:
        """Call ``average_return()`` when an evaluation is due (the points passed are used);
        True when it reaches the threshold."""
        if not self.points or env_steps < self.points[0]:
            return False
        self.points = [p for p in self.points if p > env_steps]
        start = time.time()
        value = float(average_return())
        self.eval_s += time.time() - start
        train_s = time.time() - self.start - self.eval_s
        self.evals.append({"env_steps": env_steps, "return": value, "train_s": train_s})
        return value >= THRESHOLD

    def result(self, env_steps: int) -> dict:
        hit = next((e for e in self.evals if e["return"] >= THRESHOLD), {})
        result = dict(env_steps=env_steps, wall_s=time.time() - self.start, eval_s=self.eval_s)
        result.update(steps_to_threshold=hit.get("env_steps"))
        return dict(result, train_s_to_threshold=hit.get("train_s"), evals=self.evals)


def alf_worker(seed: int, max_env_steps: int) -> dict:
    import torch

    from alf.algorithms.config import TrainerConfig
    from alf.environments.utils import create_environment
    from alf.trainers.evaluator import Evaluator
    from alf.trainers.policy_trainer import create_algorithm
    from alf.utils import seeding
    from alf.utils.common import parse_conf_file
    from alf.utils.schedulers import update_progress

    torch.set_num_threads(1)
    clock = Clock(max_env_steps)
    parse_conf_file(CONF, conf_params=[f"TrainerConfig.num_env_steps={max_env_steps}"])
    seeding.set_random_seed(seed)
    env = create_environment(seed=seed)
    eval_seed = seeding.derived_seed(seed, 999)
    eval_env = create_environment(num_parallel_environments=1, nonparallel=True, seed=eval_seed)
    algorithm = create_algorithm(TrainerConfig(random_seed=seed), env)
    evaluator = Evaluator(algorithm, eval_env, 10, seed=eval_seed)
    env_steps = iteration = 0
    try:
        while env_steps < max_env_steps and clock.points:
            update_progress(iteration, env_steps, env_steps / max_env_steps)
            env_steps += algorithm.train_iter()
            iteration += 1
            if clock.evaluate(env_steps, lambda: evaluator.evaluate().average_return):
                break
    finally:
        env.close()
        eval_env.close()
    return clock.result(env_steps)


def sb3_worker(seed: int, max_env_steps: int) -> dict:
    import gymnasium as gym
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    clock = Clock(max_env_steps)
    eval_env = Monitor(gym.make("CartPole-v1"))
    eval_env.reset(seed=seed + 999)

    class EvalAtRolloutStart(BaseCallback):
        stop = False

        def _on_rollout_start(self) -> None:
            average = partial(evaluate_policy, self.model, eval_env, 10, deterministic=True)
            self.stop = clock.evaluate(self.model.num_timesteps, lambda: average()[0])

        def _on_step(self) -> bool:
            return not self.stop

    model = sb3.model(dict(algorithm="dqn", env_name="CartPole-v1", sb3=SB3_DQN), seed)
    # One more rollout than the budget, so that the evaluation at the budget runs.
    model.learn(total_timesteps=max_env_steps + TRAIN_FREQ, callback=EvalAtRolloutStart())
    return clock.result(int(model.num_timesteps))


def tables(runs: list[dict]) -> str:
    """Per-run table and per-framework summary."""
    fmt, t = (lambda v, d=0: report.fmt(v, d, none="—")), f"{THRESHOLD:g}"
    rows = []
    for r in runs:
        train_s = r["wall_s"] - r["eval_s"]
        best = max((e["return"] for e in r["evals"]), default=None)
        row = [r["framework"], r["seed"], fmt(r["steps_to_threshold"])]
        row += [fmt(r["train_s_to_threshold"], 1), fmt(r["env_steps"]), fmt(train_s, 1)]
        rows.append(row + [fmt(r["env_steps"] / train_s), fmt(best, 1)])
    summary = []
    for fw in ("alf", "sb3"):
        mine = [r for r in runs if r["framework"] == fw]
        steps = [r["steps_to_threshold"] for r in mine]
        med = report.median([math.inf if s is None else s for s in steps])
        row = [fw, f"{sum(s is not None for s in steps)}/{len(mine)}"]
        row += ["> budget" if med == math.inf else fmt(med)]
        row += [fmt(report.median(r["train_s_to_threshold"] for r in mine), 1)]
        rates = (r["env_steps"] / (r["wall_s"] - r["eval_s"]) for r in mine)
        summary.append(row + [fmt(report.median(rates))])
    header = ["framework", "seed", f"steps to ≥{t}", f"train s to ≥{t}", "env steps run", "train s"]
    header += ["env steps/s (train)", "best eval"]
    summary_header = ["framework", f"seeds reaching ≥{t}", f"median steps to ≥{t} (unreached = ∞)"]
    summary_header += [f"median train s to ≥{t} (reached runs)", "median env steps/s"]
    return f"{report.table(header, rows)}\n\n{report.table(summary_header, summary)}"


def seed_runs(seed: int, max_env_steps: int, work_dir: str) -> list[dict]:
    """alf's and SB3's run on ``seed``, each in a fresh process."""
    runs = []
    for fw in ("alf", "sb3"):
        out = os.path.join(work_dir, f"{fw}_{seed}.json")
        run = runner.call(
            f"benchmarks.dqn_cart_pole:{fw}_worker", out, seed=seed, max_env_steps=max_env_steps
        )
        runs.append(dict(run, framework=fw, seed=seed))
    return runs


def main() -> None:
    parser = cli.parser(__doc__, NAME)
    parser.add_argument("--max_env_steps", type=int, default=50_000)
    args = parser.parse_args()
    jobs = [partial(seed_runs, seed, args.max_env_steps, args.work_dir) for seed in args.seeds]
    cli.run(args, NAME, tables, jobs, max_env_steps=args.max_env_steps)


if __name__ == "__main__":
    main()
