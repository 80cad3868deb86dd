"""PPG against PPO at equal env steps on MiniGrid-DoorKey-5x5 (procedurally generated rooms,
the closest to the paper's Procgen that fits a CPU).

    OMP_NUM_THREADS=1 python -m benchmarks.ppg_vs_ppo --seeds 0 1 2 [--env_steps 150000]

The same policy and value networks (separate 64x64 tanh MLPs on the 7x7x3 view scaled to
[0, 1]), PPO loss, optimizer and epochs; PPG adds the auxiliary head and phase (β_clone 1).
Each run is a fresh single-threaded process, PPO and PPG alternating who goes first. Final
return: the mean of 32 evaluation episodes (ε-greedy 0.1, as ALF's PPG base conf) after
``--env_steps``. Records go to ``results/ppg_vs_ppo.json``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time

import gymnasium
import numpy as np
import torch

from benchmarks.harness import report, runner

ENV_ID = "AlfBenchDoorKey5x5-v0"
HIDDEN = (64, 64)
NUM_ENVS, UNROLL = 16, 64
TRAINER = dict(unroll_length=UNROLL, mini_batch_length=1, mini_batch_size=256)
TRAINER.update(num_updates_per_train_iter=4)
AUX = dict(interval=8, mini_batch_size=16, num_updates_per_train_iter=6)


class _FlatView(gymnasium.ObservationWrapper):
    """MiniGrid's 7x7x3 view (object, colour, state ids up to 10) as 147 floats in [0, 1]."""

    def __init__(self, env):
        super().__init__(env)
        self.observation_space = gymnasium.spaces.Box(0.0, 1.0, (147,), np.float32)

    def observation(self, observation):
        return (observation["image"].reshape(-1) / 10.0).astype(np.float32)


def _make(**kwargs):
    import minigrid  # noqa: F401 (registers the MiniGrid ids)

    return _FlatView(gymnasium.make("MiniGrid-DoorKey-5x5-v0", **kwargs))


if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point=_make)


def _algorithm(name: str, env, config):
    from alf.algorithms.ppg_algorithm import PPGAlgorithm, PPGAuxOptions
    from alf.algorithms.ppg_aux_phase_loss import PPGAuxPhaseLoss
    from alf.algorithms.ppo_algorithm import PPOAlgorithm
    from alf.algorithms.ppo_loss import PPOLoss
    from alf.networks import ActorDistributionNetwork, EncodingNetwork, ValueNetwork
    from alf.optimizers import Adam

    specs = dict(observation_spec=env.observation_spec(), action_spec=env.action_spec())
    specs.update(env=env, config=config)
    loss = PPOLoss(gamma=0.99, td_lambda=0.95, entropy_regularization=0.01, td_loss_weight=0.5)
    optimizer = Adam(lr=1e-3, gradient_clipping=0.5)
    layers = dict(fc_layer_params=HIDDEN, activation=torch.tanh)
    if name == "ppo":
        return PPOAlgorithm(
            **specs,
            loss=loss,
            optimizer=optimizer,
            actor_network_ctor=functools.partial(ActorDistributionNetwork, **layers),
            value_network_ctor=functools.partial(ValueNetwork, **layers),
        )
    return PPGAlgorithm(
        **specs,
        loss=loss,
        policy_optimizer=optimizer,
        aux_optimizer=Adam(lr=1e-3, gradient_clipping=0.5),
        aux_options=PPGAuxOptions(**AUX),
        aux_loss=PPGAuxPhaseLoss(gamma=0.99, td_lambda=0.95, policy_kl_loss_weight=1.0),
        encoding_network_ctor=functools.partial(EncodingNetwork, **layers),
    )


def run(algorithm: str, seed: int, env_steps: int) -> dict:
    """One training run in this process; its final evaluation and timings."""
    from alf.algorithms.config import TrainerConfig
    from alf.environments.utils import create_environment
    from alf.trainers.evaluator import Evaluator
    from alf.utils import seeding

    torch.set_num_threads(1)
    seeding.set_random_seed(seed)
    name = f"benchmarks.ppg_vs_ppo:{ENV_ID}"
    env = create_environment(
        env_name=name, num_parallel_environments=NUM_ENVS, nonparallel=True, seed=seed
    )
    config = TrainerConfig(**TRAINER, epsilon_greedy=0.1)
    alg = _algorithm(algorithm, env, config)
    steps, start, curve = 0, time.perf_counter(), []
    while steps < env_steps:
        steps += alg.train_iter()
        if steps % (16 * NUM_ENVS * UNROLL) == 0:  # every 16 iterations, 16,384 steps
            curve.append([steps, round(float(alg.metrics.average_return), 3)])
    train_s = time.perf_counter() - start
    eval_env = create_environment(env_name=name, num_parallel_environments=8, nonparallel=True)
    metrics = Evaluator(alg, eval_env, num_episodes=32, seed=seed + 1000).evaluate()
    env.close()
    eval_env.close()
    record = dict(algorithm=algorithm, seed=seed, env_steps=steps, train_s=train_s)
    record.update(final_return=float(torch.as_tensor(metrics.average_return)))
    record.update(steps_to_090=next((n for n, r in curve if r >= 0.9), None), curve=curve)
    return dict(record, us_per_step=1e6 * train_s / steps)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--env_steps", type=int, default=150_000)
    parser.add_argument("--work_dir", default="/tmp/ppg_vs_ppo")
    parser.add_argument("--out", default=os.path.join("benchmarks", "results", "ppg_vs_ppo.json"))
    args = parser.parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    machine, runs = runner.machine_info(), []
    for i, seed in enumerate(args.seeds):
        for algorithm in ("ppo", "ppg") if i % 2 == 0 else ("ppg", "ppo"):
            out = os.path.join(args.work_dir, f"{algorithm}_{seed}.json")
            kwargs = dict(algorithm=algorithm, seed=seed, env_steps=args.env_steps)
            runs.append(runner.call("benchmarks.ppg_vs_ppo:run", out, **kwargs))
            print(runs[-1], flush=True)
    summary = {
        a: {f"median_{k}": report.median(r[k] for r in runs if r["algorithm"] == a)
            for k in ("final_return", "steps_to_090", "us_per_step")}
        for a in ("ppo", "ppg")
    }  # fmt: skip
    command = " ".join(["OMP_NUM_THREADS=1 python -m benchmarks.ppg_vs_ppo", *sys.argv[1:]])
    record = dict(command=command, machine=dict(machine, load_end=runner.load_average()))
    settings = dict(num_envs=NUM_ENVS, hidden=HIDDEN, trainer=TRAINER, aux=AUX)
    record.update(task="MiniGrid-DoorKey-5x5-v0", settings=settings)
    report.write_json(args.out, dict(record, summary=summary, runs=runs))
    print(summary)


if __name__ == "__main__":
    main()
