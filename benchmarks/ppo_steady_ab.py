"""Steady-state PPO training speed, alf vs Stable-Baselines3, alternating short runs.

    python benchmarks/ppo_steady_ab.py --task halfcheetah [--repeats 3] [--iterations 6]

Each run is a fresh process that builds the task's PPO (alf: the benchmark conf through
``PolicyTrainer`` without evaluation; SB3: ``ppo_halfcheetah.py`` / ``ppo_cart_pole.py``'s
hyperparameters), trains ``--warmup`` iterations untimed, then times ``--iterations``
training iterations (rollout + update, nothing else), measuring wall and process CPU
time. alf and SB3 alternate, ``--repeats`` pairs, one torch thread each. CPU time is the
process's own, so it is less sensitive than wall time to other jobs on a shared machine.
Prints one JSON line per run and the medians; ``--out`` saves the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
TASKS = {
    "halfcheetah": dict(
        module="ppo_halfcheetah",
        conf="benchmarks/confs/ppo_halfcheetah_bench_conf.py",
        env_name="HalfCheetah-v5",
        num_envs=1,
    ),
    "cartpole": dict(
        module="ppo_cart_pole",
        conf="alf/examples/ppo_cart_pole_conf.py",
        env_name="CartPole-v1",
        num_envs=8,
    ),
}


def _sb3_model(task: dict, seed: int):
    import importlib

    import torch
    from sb3_ppo_worker import _schedule
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    ppo = dict(importlib.import_module(task["module"]).SB3_PPO)
    policy = ppo.pop("policy")
    policy_kwargs = dict(ppo.pop("policy_kwargs", {}))
    if "activation_fn" in policy_kwargs:
        policy_kwargs["activation_fn"] = getattr(torch.nn, policy_kwargs["activation_fn"])
    for name in ("learning_rate", "clip_range"):
        ppo[name] = _schedule(ppo[name])
    env = make_vec_env(task["env_name"], n_envs=task["num_envs"], seed=seed)
    return PPO(policy, env, seed=seed, device="cpu", policy_kwargs=policy_kwargs, **ppo)


def worker(framework: str, task_name: str, seed: int, warmup: int, iterations: int) -> dict:
    """Time ``iterations`` training iterations after ``warmup`` in this process."""
    import torch

    torch.set_num_threads(1)
    task = TASKS[task_name]
    if framework == "sb3":
        model = _sb3_model(task, seed)
        steps_per_iter = model.n_steps * model.n_envs
        model.learn(warmup * steps_per_iter)

        def train():
            model.learn(iterations * steps_per_iter, reset_num_timesteps=False)
    else:
        from alf.algorithms.config import TrainerConfig
        from alf.trainers.policy_trainer import PolicyTrainer
        from alf.utils import common

        params = [
            f"TrainerConfig.root_dir='/tmp/ppo_steady_ab/{task_name}_{seed}'",
            f"TrainerConfig.random_seed={seed}",
            "TrainerConfig.evaluate=False",
        ]
        common.parse_conf_file(os.path.join(REPO_DIR, task["conf"]), params, [])
        algorithm = PolicyTrainer(TrainerConfig()).algorithm
        for _ in range(warmup):
            steps_per_iter = algorithm.train_iter()

        def train():
            for _ in range(iterations):
                algorithm.train_iter()

    wall, cpu = time.perf_counter(), time.process_time()
    train()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    steps = iterations * steps_per_iter
    return dict(
        framework=framework,
        task=task_name,
        seed=seed,
        env_steps=steps,
        wall_s=wall,
        cpu_s=cpu,
        steps_per_sec=steps / wall,
        steps_per_cpu_sec=steps / cpu,
        load=[round(x, 2) for x in os.getloadavg()],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(TASKS), default="halfcheetah")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--out", default=None)
    parser.add_argument("--worker", choices=["alf", "sb3"], help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = worker(args.worker, args.task, args.seed, args.warmup, args.iterations)
        print("RESULT " + json.dumps(result), flush=True)
        return
    runs = []
    for repeat in range(args.repeats):
        for framework in ("alf", "sb3"):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", framework]
            cmd += ["--task", args.task, "--seed", str(repeat)]
            cmd += ["--warmup", str(args.warmup), "--iterations", str(args.iterations)]
            out = subprocess.run(cmd, cwd=REPO_DIR, capture_output=True, text=True, check=True)
            line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
            runs.append(json.loads(line[len("RESULT ") :]))
            print(json.dumps(runs[-1]), flush=True)
    for key in ("steps_per_sec", "steps_per_cpu_sec"):
        med = {
            fw: statistics.median(r[key] for r in runs if r["framework"] == fw)
            for fw in ("alf", "sb3")
        }
        print(
            f"median {key}: alf {med['alf']:.1f}, sb3 {med['sb3']:.1f}, "
            f"alf/sb3 {med['alf'] / med['sb3']:.2f}"
        )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(args=vars(args), runs=runs), f, indent=1)


if __name__ == "__main__":
    sys.path.insert(0, BENCH_DIR)
    main()
