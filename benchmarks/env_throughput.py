"""Batched environment stepping throughput: alf's backends vs gymnasium's vector envs.

    python -m benchmarks.env_throughput [--repeats 5] [--env_steps 16000] [--no_write]

Every configuration steps CartPole-v1 with the same pre-generated random actions, so only
stepping is timed (alf: ``TimeStep``s of tensors; gymnasium: numpy arrays; both auto-reset). The
configurations are measured in turns, ``--repeats`` times in shuffled order; medians are
printed and written into the ``env_throughput`` block of RESULTS.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

import gymnasium as gym
import numpy as np
import torch

from alf.environments import suite_gym
from alf.environments.batched_environment import BatchedEnvironment
from alf.environments.thread_environment import ThreadEnvironment
from alf.environments.utils import create_environment, env_constructors
from benchmarks.harness import report, runner

ENV_NAME = "CartPole-v1"


class Config:
    """One way of stepping ``num_envs`` CartPoles as a batch."""

    def __init__(self, name: str, num_envs: int, make, is_alf: bool):
        self.name, self.num_envs, self.is_alf = name, num_envs, is_alf
        self.env, self.rates = make(), []

    def run(self, actions) -> float:
        """Env steps per second over ``actions`` (``[T, num_envs]``)."""
        step = self.env.step
        start = time.perf_counter()
        for action in actions:
            step(action)
        return actions.shape[0] * self.num_envs / (time.perf_counter() - start)


def _gym_vector(cls, num_envs: int):
    return lambda: cls([lambda: gym.make(ENV_NAME) for _ in range(num_envs)])


def _alf(num_envs: int, **kwargs):
    return lambda: create_environment(ENV_NAME, num_parallel_environments=num_envs, **kwargs)


def _members(num_envs: int):
    constructors = env_constructors(ENV_NAME, suite_gym.load, num_envs, seed=None)
    return lambda: BatchedEnvironment(constructors, fuse_gym_steps=False)


def build_configs(sizes) -> list[Config]:
    """All configurations, environments started."""
    configs, top = [], max(sizes)

    def add(name, num_envs, make, is_alf=True):
        configs.append(Config(name, num_envs, make, is_alf))

    for n in sizes:
        add("gymnasium SyncVectorEnv", n, _gym_vector(gym.vector.SyncVectorEnv, n), False)
        add("gymnasium AsyncVectorEnv", n, _gym_vector(gym.vector.AsyncVectorEnv, n), False)
        add("alf ParallelAlfEnvironment, 1 env/process", n, _alf(n))
    for per_env in (top // 2, top):
        name = f"{top // per_env}x{per_env} (batch_size_per_env={per_env})"
        add(f"alf ParallelAlfEnvironment, {name}", top, _alf(top, batch_size_per_env=per_env))
    add("alf nonparallel (in-process BatchedEnvironment)", top, _alf(top, nonparallel=True))
    add("alf nonparallel, member path (fuse_gym_steps=False)", top, _members(top))
    add("alf ThreadEnvironment", 1, lambda: ThreadEnvironment(lambda: suite_gym.load(ENV_NAME)))
    return configs


def measure(configs, repeats: int, env_steps: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    for config in configs:
        num_steps = max(env_steps // config.num_envs, 50)
        actions = np.random.default_rng(seed).integers(0, 2, (num_steps, config.num_envs))
        config.actions = torch.from_numpy(actions) if config.is_alf else actions
        config.env.reset() if config.is_alf else config.env.reset(seed=0)
        config.run(config.actions[: num_steps // 10])  # warm up
    for repeat in range(repeats):
        order = list(configs)
        rng.shuffle(order)
        for config in order:
            config.rates.append(config.run(config.actions))
        print(f"repeat {repeat + 1}/{repeats} done", file=sys.stderr, flush=True)


def table(configs) -> tuple[str, float, str, str]:
    """Markdown table; ratio of alf's best to the faster gymnasium vector env at N=max."""
    lines = [
        "| configuration | N | env steps/s (median) | min | max |",
        "|---|---:|---:|---:|---:|",
    ]
    for config in configs:
        rates = config.rates
        lines.append(
            f"| {config.name} | {config.num_envs} | {statistics.median(rates):,.0f} "
            f"| {min(rates):,.0f} | {max(rates):,.0f} |"
        )
    top = max(c.num_envs for c in configs)
    at_top = [c for c in configs if c.num_envs == top]
    best_gym = max((c for c in at_top if not c.is_alf), key=lambda c: statistics.median(c.rates))
    best_alf = max((c for c in at_top if c.is_alf), key=lambda c: statistics.median(c.rates))
    ratio = statistics.median(best_alf.rates) / statistics.median(best_gym.rates)
    return "\n".join(lines), ratio, best_alf.name, best_gym.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--env_steps", type=int, default=16000, help="env steps per measurement")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--no_write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = runner.load_average()[0]
    configs = build_configs(args.sizes)
    try:
        measure(configs, args.repeats, args.env_steps)
    finally:
        for config in configs:
            config.env.close()
    rows, ratio, best_alf, best_gym = table(configs)
    top = max(args.sizes)
    text = f"""{rows}

**alf's best at N={top} ({best_alf}) / faster gymnasium vector env ({best_gym}): {ratio:.2f}x**

{args.repeats} repeats of {args.env_steps} env steps in shuffled order, medians; 1-min load
average {load_before:.1f} before, {runner.load_average()[0]:.1f} after ({runner.now()})."""
    print(text)
    if not args.no_write:
        report.write_block("env_throughput", text)


if __name__ == "__main__":
    main()
