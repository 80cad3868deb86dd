"""Training throughput on the CPU and on CUDA, measured in turns (A/B).

    python -m benchmarks.gpu_throughput [--devices cpu,cuda] [--repeats 3] [--seconds 4]
                                        [--budget 300] [--quick] [--json PATH]

Each case builds its example conf's algorithm with ``PolicyTrainer`` on one device, warms up
(SAC: past its 100 initial collect steps), then times ``train_iter`` for ``--seconds``; the
devices alternate, in reversed order every other repetition, and no repetition is begun that
would end past ``--budget``. Cases: PPO CartPole and SAC Pendulum as their example confs (one
CPU thread), PPO with 256 CartPoles and minibatches of 4096, SAC with minibatches of 4096 (all
cores). Matrix products are float32 on both devices (no TF32).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import torch

from benchmarks.harness import report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "alf", "examples")
ALL_CORES = torch.get_num_threads()  # torch's default: one thread per core
# name: (conf, conf params, warm-up iterations, metric); an iteration's count is its env steps,
# or 1 for updates/s (SAC: one update per iteration)
ALL = f"TrainerConfig.num_threads={ALL_CORES}"
BATCH, ENVS = "TrainerConfig.mini_batch_size=4096", "create_environment.num_parallel_environments"
PPO, SAC = "ppo_cart_pole_conf.py", "sac_pendulum_conf.py"
CASES = {
    "ppo_cartpole": (PPO, [], 3, "env_steps/s"),
    "sac_pendulum": (SAC, [], 150, "env_steps/s"),
    "ppo_cartpole_256envs_batch4096": (PPO, [f"{ENVS}=256", BATCH, ALL], 1, "env_steps/s"),
    "sac_pendulum_batch4096": (SAC, [BATCH, ALL], 110, "updates/s"),
}


def measure(case: str, device: str, seconds: float) -> float:
    """One measurement of ``case`` on ``device``: its metric's rate."""
    import alf
    from alf.algorithms.config import TrainerConfig
    from alf.trainers.policy_trainer import PolicyTrainer
    from alf.utils import common

    conf, params, warmup, metric = CASES[case]
    root_dir = tempfile.mkdtemp(prefix="gpu_throughput_")
    own = [f"TrainerConfig.root_dir={root_dir!r}", f"TrainerConfig.device={device!r}"]
    own += ["TrainerConfig.random_seed=0", "TrainerConfig.evaluate=False"]
    alf.reset_configs()
    common.parse_conf_file(os.path.join(EXAMPLES, conf), [*own, *params])
    trainer = PolicyTrainer(TrainerConfig())
    try:
        step = trainer.algorithm.train_iter
        for _ in range(warmup):
            step()
        sync = torch.cuda.synchronize if device == "cuda" else lambda: None
        sync()
        count, iterations, start = 0, 0, time.perf_counter()
        while iterations < 2 or time.perf_counter() - start < seconds:
            steps = step()
            count, iterations = count + (steps if metric == "env_steps/s" else 1), iterations + 1
        sync()
        return count / (time.perf_counter() - start)
    finally:
        trainer.close()
        alf.reset_configs()


def run(devices: list[str], repeats: int, seconds: float, cases: list[str], budget: float):
    """``{case: results}``; a repetition that would end past ``budget`` seconds is not begun."""
    rates, start = {c: {d: [] for d in devices} for c in cases}, time.perf_counter()
    for rep in range(repeats):
        elapsed = time.perf_counter() - start
        if rep and elapsed * (rep + 1) / rep > budget:
            print(f"  budget: {rep} of {repeats} repetitions", flush=True)
            break
        order = devices if rep % 2 == 0 else devices[::-1]
        for case in cases:
            for device in order:
                rates[case][device].append(measure(case, device, seconds))
                print(f"  {case} {device} rep {rep}: {rates[case][device][-1]:,.1f}", flush=True)
    results = {}
    for case in cases:
        entry = {"metric": CASES[case][3]}
        for device in devices:
            entry[device] = {"median": round(statistics.median(rates[case][device]), 2)}
            entry[device]["runs"] = [round(r, 1) for r in rates[case][device]]
        if "cpu" in devices and "cuda" in devices:
            entry["cuda_over_cpu"] = round(entry["cuda"]["median"] / entry["cpu"]["median"], 3)
        results[case] = entry
    return results


def markdown(record: dict) -> str:
    """A ``gpu_check.json`` record (``gpu_check.sh``'s summary) as RESULTS.md shows it."""
    m, tests, cases = record["machine"], record["tests"], record["throughput"]["cases"]
    head = f"{m['date']}, {m['gpu']} ({m['cpu_cores']} CPU cores), alf {m['alf']}, torch "
    head += f"{m['torch']}: `{record['command']}`; CUDA tests {tests['passed']}/{tests['run']} "
    head += f"passed; alf modules imported {m['modules_imported']}\n\n"
    rows = []
    for case, e in cases.items():
        rows.append([case, e["metric"], *(f"{e[d]['median']:,.1f}" for d in ("cpu", "cuda"))])
        rows[-1].append(f"**{e['cuda_over_cpu']:.2f}**")
    return head + report.table(["case", "metric", "CPU median", "CUDA median", "CUDA / CPU"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", default="cpu,cuda", help="comma-separated: cpu, cuda")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0, help="timed per measurement")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    parser.add_argument("--quick", action="store_true", help="1 repeat of 1 s (a smoke test)")
    parser.add_argument("--budget", type=float, default=300, help="seconds: fewer repeats past it")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    devices, cases = args.devices.split(","), args.cases.split(",")
    bad = [d for d in devices if d not in ("cpu", "cuda")] + [c for c in cases if c not in CASES]
    if "cuda" in devices and not torch.cuda.is_available():
        bad.append("cuda (torch sees no CUDA device)")
    if bad:
        parser.exit(2, f"gpu_throughput: error: unknown or unavailable: {', '.join(bad)}\n")
    repeats, seconds = (1, 1.0) if args.quick else (args.repeats, args.seconds)
    start = time.time()
    results = run(devices, repeats, seconds, cases, args.budget)
    for case, entry in results.items():
        print(case, entry["metric"], {d: entry[d]["median"] for d in devices})
    done = len(next(iter(results.values()))[devices[0]]["runs"])
    summary = dict(repeats=done, seconds=seconds, cpu_threads_large=ALL_CORES, cases=results)
    summary["wall_s"] = round(time.time() - start, 1)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
