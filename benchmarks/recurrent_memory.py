"""Recurrent vs feed-forward PPO on the memory task ``RepeatFirstObservation-v0``.

    python -m benchmarks.recurrent_memory [--seeds 0 1 2] [--iterations 60]

The cue, shown only in an episode's first observation, must be repeated 4 steps later
(``alf/environments/memory_env.py``). Every variant trains PPO with the same loss, optimizer,
8 envs, 20-step unrolls and budget, in this process, evaluated (64 deterministic episodes on 8
envs) every 10 iterations: LSTM networks on whole episode segments (``lstm_trajectories``), on
10- or 4-step pieces started from the rollout state (``lstm_chunks_10``, ``lstm_chunks_4``),
and MLP networks (``feed_forward``).
"""

from __future__ import annotations

import functools
import statistics
import time

import torch

from alf.environments.utils import create_environment
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.value_networks import ValueNetwork
from benchmarks.harness import cli, report
from tests.algorithms.algorithm_test_utils import evaluate
from tests.algorithms.test_recurrent_ppo import MEMORY_ENV, _config, _memory_ppo, _rnn_networks

STEPS_PER_ITERATION = 8 * 20


def variants() -> dict:
    ff = dict(
        actor_network_ctor=functools.partial(ActorDistributionNetwork, fc_layer_params=(16,)),
        value_network_ctor=functools.partial(ValueNetwork, fc_layer_params=(16,)),
    )
    return {
        "lstm_trajectories": (_rnn_networks(), dict(trajectory_mini_batches=True)),
        "lstm_chunks_10": (_rnn_networks(), dict(mini_batch_length=10)),
        "lstm_chunks_4": (_rnn_networks(), dict(mini_batch_length=4, mini_batch_size=40)),
        "feed_forward": (
            ff,
            dict(mini_batch_length=1, use_rollout_state=False, mini_batch_size=160),
        ),
    }


def run(name: str, seed: int, iterations: int) -> list[dict]:
    networks, overrides = variants()[name]
    torch.set_num_threads(1)
    alg, env = _memory_ppo(networks, _config(**overrides), seed)
    eval_env = create_environment(
        env_name=MEMORY_ENV, num_parallel_environments=8, nonparallel=True, seed=seed + 100
    )
    curve, start = [], time.time()
    try:
        for i in range(1, iterations + 1):
            alg.train_iter()
            if i % 10 == 0:
                curve.append((i * STEPS_PER_ITERATION, evaluate(alg, eval_env, num_episodes=64)))
    finally:
        env.close()
        eval_env.close()
    reached = next((steps for steps, ret in curve if ret >= 0.9), None)
    result = dict(variant=name, seed=seed, curve=curve, final_return=curve[-1][1])
    return [dict(result, steps_to_0_9=reached, wall_s=time.time() - start)]


def table(runs: list[dict]) -> str:
    rows = []
    for name in variants():
        mine = [r for r in runs if r["variant"] == name]
        if not mine:
            continue
        finals = [r["final_return"] for r in mine]
        reached = ", ".join(f"{r['steps_to_0_9']:,}" if r["steps_to_0_9"] else "—" for r in mine)
        row = [name, len(mine), f"{statistics.median(finals):.3f}"]
        row += [", ".join(f"{f:.3f}" for f in finals), reached]
        rows.append(row + [f"{statistics.median(r['wall_s'] for r in mine):.1f}"])
    header = ["variant", "seeds", "final eval return (median)", "per seed"]
    header += ["env steps to ≥ 0.9 (per seed)", "wall s (median)"]
    return report.table(header, rows)


def main() -> None:
    parser = cli.parser(__doc__, "recurrent_memory")
    parser.add_argument("--iterations", type=int, default=60)
    args = parser.parse_args()
    jobs = [
        functools.partial(run, name, seed, args.iterations)
        for seed in args.seeds
        for name in variants()
    ]
    cli.run(args, "recurrent_memory", table, jobs, block=False, iterations=args.iterations)


if __name__ == "__main__":
    main()
