"""Batched environment stepping throughput: alf's backends vs gymnasium's vector envs.

    python -m benchmarks.env_throughput [--repeats 5] [--env_steps 16000] [--no_write]

Every configuration steps CartPole-v1 with the same pre-generated random actions, so only
stepping is timed (alf: ``TimeStep``s of tensors; gymnasium: numpy arrays; both auto-reset). The
configurations are measured in turns, ``--repeats`` times in shuffled order; medians are
printed and written into the ``env_throughput`` block of RESULTS.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
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

ENV_NAME, SIZES = "CartPole-v1", (1, 2, 4, 8)


@dataclasses.dataclass
class Config:
    """One way of stepping ``num_envs`` CartPoles as a batch."""

    name: str
    num_envs: int
    env: object
    is_alf: bool = True
    rates: list = dataclasses.field(default_factory=list)

    def run(self, actions) -> float:
        """Env steps per second over ``actions`` (``[T, num_envs]``)."""
        step, start = self.env.step, time.perf_counter()
        for action in actions:
            step(action)
        return actions.shape[0] * self.num_envs / (time.perf_counter() - start)


def build_configs() -> list[Config]:
    """All configurations, environments started."""
    configs, top = [], max(SIZES)

    def alf(num_envs: int, **kwargs):
        return create_environment(ENV_NAME, num_parallel_environments=num_envs, **kwargs)

    for n in SIZES:
        for vector_env in (gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv):
            env = vector_env([lambda: gym.make(ENV_NAME) for _ in range(n)])
            configs.append(Config(f"gymnasium {vector_env.__name__}", n, env, is_alf=False))
        configs.append(Config("alf ParallelAlfEnvironment, 1 env/process", n, alf(n)))
    for per_env in (top // 2, top):
        name = f"{top // per_env}x{per_env} (batch_size_per_env={per_env})"
        configs.append(
            Config(f"alf ParallelAlfEnvironment, {name}", top, alf(top, batch_size_per_env=per_env))
        )
    name = "alf nonparallel (in-process BatchedEnvironment)"
    configs.append(Config(name, top, alf(top, nonparallel=True)))
    members = env_constructors(ENV_NAME, suite_gym.load, top, seed=None)
    members = BatchedEnvironment(members, fuse_gym_steps=False)
    configs.append(Config("alf nonparallel, member path (fuse_gym_steps=False)", top, members))
    if importlib.util.find_spec("envpool") is not None:  # the optional envpool backend
        name = "alf envpool backend (batched_backend='envpool')"
        configs.append(Config(name, top, alf(top, batched_backend="envpool")))
    thread = ThreadEnvironment(lambda: suite_gym.load(ENV_NAME))
    return configs + [Config("alf ThreadEnvironment", 1, thread)]


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
    lines = ["| configuration | N | env steps/s (median) | min | max |\n|---|---:|---:|---:|---:|"]
    for c in configs:
        c.median = statistics.median(c.rates)
        rates = (f"{r:,.0f}" for r in (c.median, min(c.rates), max(c.rates)))
        lines.append(f"| {c.name} | {c.num_envs} | {' | '.join(rates)} |")
    at_top = [c for c in configs if c.num_envs == max(SIZES)]
    best_gym, best_alf = (
        max((c for c in at_top if c.is_alf == is_alf), key=lambda c: c.median)
        for is_alf in (False, True)
    )
    return "\n".join(lines), best_alf.median / best_gym.median, best_alf.name, best_gym.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--env_steps", type=int, default=16000, help="env steps per measurement")
    parser.add_argument("--no_write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = runner.load_average()[0]
    configs = build_configs()
    try:
        measure(configs, args.repeats, args.env_steps)
    finally:
        for config in configs:
            config.env.close()
    rows, ratio, best_alf, best_gym = table(configs)
    top = max(SIZES)
    text = f"""{rows}

**alf's best at N={top} ({best_alf}) / faster gymnasium vector env ({best_gym}): {ratio:.2f}x**

{args.repeats} repeats of {args.env_steps} env steps in shuffled order, medians; 1-min load
average {load_before:.1f} before, {runner.load_average()[0]:.1f} after ({runner.now()})."""
    print(text)
    if not args.no_write:
        report.write_block("env_throughput", text)


if __name__ == "__main__":
    main()
