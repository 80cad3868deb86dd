"""Remote samplers: throughput of in-process vs 2 process samplers (local and server
inference) vs 2 Ray samplers, and the cost of a weight broadcast and of one batched
inference round trip.

    python -m benchmarks.scale_out [--rounds 3] [--tasks cartpole halfcheetah] [--no_ray]

For each task every variant's trainer is built once and kept; the variants are then
measured in turns (``--rounds`` rounds, the order shuffled each round), each turn timing

- ``act``: unrolls only (``algorithm.unroller.unroll``, as ``train_iter`` asks for them),
  env steps per second of acting;
- ``train``: whole training iterations (``algorithm.train_iter``), env steps per second.

Medians over the rounds are printed. Then, per task: the weights a local-inference
sampler loads (size) and the time of one broadcast (a request carrying them minus the
same request without them; the request acts 0 steps), and the time of one batched
inference round trip of the server (one step of all envs: ``rollout_step`` on the
batch, actions out, time steps back). HalfCheetah needs ``pip install -e '.[mujoco]'``.
Nothing is written; the numbers go to ``benchmarks/RESULTS.md`` by hand.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time

import torch

import alf
from alf.algorithms.config import TrainerConfig
from alf.samplers.worker import policy_weights
from alf.trainers.policy_trainer import PolicyTrainer
from alf.utils import common

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = {
    # conf, extra conf params, unroll steps per turn
    "cartpole": ("ppo_cart_pole_conf.py", [], 4),
    "halfcheetah": (
        "ppo_mujoco_conf.py",
        [
            "create_environment.num_parallel_environments=2",
            "TrainerConfig.unroll_length=256",
            "TrainerConfig.num_updates_per_train_iter=2",
        ],
        1,
    ),
}
VARIANTS = {
    "in-process": [],
    "2 processes, local": ["SamplerConfig.num_samplers=2", "SamplerConfig.inference='local'"],
    "2 processes, server": ["SamplerConfig.num_samplers=2", "SamplerConfig.inference='server'"],
    "2 Ray, local": [
        "SamplerConfig.num_samplers=2",
        "SamplerConfig.inference='local'",
        "SamplerConfig.backend='ray'",
    ],
}


def build(conf: str, params: list[str], root_dir: str) -> PolicyTrainer:
    alf.reset_configs()
    common.parse_conf_file(conf, params + ["TrainerConfig.evaluate=False"])
    return PolicyTrainer(TrainerConfig(root_dir=root_dir))


def env_steps_per_second(trainer, what: str, turns: int) -> float:
    algorithm, config = trainer.algorithm, trainer.algorithm.config
    learner = algorithm.learner
    start, steps = time.perf_counter(), 0
    for _ in range(turns):
        if what == "train":
            steps += algorithm.train_iter()
        else:
            unroll = algorithm.unroller.unroll(
                config.unroll_length,
                raw=learner.raw_experience,
                bootstrap=learner.needs_bootstrap_row(),
            )
            algorithm.data_transformer.after_train_iter()
            steps += unroll.num_env_steps
    return steps / (time.perf_counter() - start)


def broadcast_seconds(trainer, repeats: int = 20) -> tuple[float, float, int]:
    """(seconds with weights, without, bytes of the weights) of a 0-step unroll request."""
    unroller = trainer.algorithm.unroller
    pool, algorithm = unroller.pool, trainer.algorithm
    weights = policy_weights(algorithm)
    size = sum(t.numel() * t.element_size() for t in weights.values())
    version = pool.versions[0]
    times = {True: [], False: []}
    for _ in range(repeats):
        for with_weights in (True, False):
            payload = {"num_steps": 0, "raw": True, "bootstrap": False, "version": version}
            if with_weights:
                payload["weights"] = weights
            start = time.perf_counter()
            pool.send(0, "unroll", payload)
            pool.wait([0], 60.0)
            times[with_weights].append(time.perf_counter() - start)
    return statistics.median(times[True]), statistics.median(times[False]), size


def inference_round_trip_seconds(trainer, steps: int = 200) -> float:
    """Seconds per server step of all envs (2 process samplers, server inference)."""
    server = trainer.algorithm.unroller.server
    server.run(1)
    start = time.perf_counter()
    server.run(steps)
    return (time.perf_counter() - start) / steps


def measure_task(task: str, rounds: int, use_ray: bool) -> None:
    conf, params, turns = TASKS[task]
    conf = os.path.join(REPO, "alf", "examples", conf)
    variants = {k: v for k, v in VARIANTS.items() if use_ray or "Ray" not in k}
    trainers, rates = {}, {(v, w): [] for v in variants for w in ("act", "train")}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for name, extra in variants.items():
                trainers[name] = build(conf, params + extra, os.path.join(tmp, str(len(trainers))))
                env_steps_per_second(trainers[name], "train", 1)  # warm up
            rng = random.Random(0)
            for _ in range(rounds):
                order = list(variants)
                rng.shuffle(order)
                for name in order:
                    for what in ("act", "train"):
                        rates[name, what].append(env_steps_per_second(trainers[name], what, turns))
            print(f"\n## {task}: env steps/s (median of {rounds} rounds)")
            print("| variant | act | train |\n|---|---:|---:|")
            for name in variants:
                act = statistics.median(rates[name, "act"])
                train = statistics.median(rates[name, "train"])
                print(f"| {name} | {act:,.0f} | {train:,.0f} |")
            with_w, without, size = broadcast_seconds(trainers["2 processes, local"])
            print(
                f"weight broadcast ({size / 1024:.0f} kB): {1000 * (with_w - without):.2f} ms "
                f"(request with weights {1000 * with_w:.2f} ms, without {1000 * without:.2f} ms)"
            )
            step = inference_round_trip_seconds(trainers["2 processes, server"])
            print(f"server inference round trip (all envs, one step): {1000 * step:.3f} ms")
        finally:
            for trainer in trainers.values():
                trainer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--no_ray", action="store_true", help="leave out the Ray variant")
    args = parser.parse_args()
    torch.set_num_threads(1)
    use_ray = not args.no_ray
    if use_ray:
        try:
            import ray  # noqa: F401
        except ImportError:
            print("Ray is not installed: its variant is left out (pip install 'alf[ray]')")
            use_ray = False
    for task in args.tasks:
        measure_task(task, args.rounds, use_ray)


if __name__ == "__main__":
    main()
