"""Mirror loss on Walker2d-v5: symmetry error and return, with and without.

    python -m benchmarks.mirror_walker [--seeds 0 1] [--num_env_steps 100000] [--report_only]

Trains ``alf/examples/ppo_mirror_walker_conf.py`` through the CLI with
``PPOLoss.mirror_loss_coeff`` 1 (the conf's) and 0. Each final policy plays ``--num_episodes``
deterministic episodes (env seeds 1000, 1001, ...): eval return, and symmetry error, the mean
over the visited states ``s`` of ``||mu(s) - Psi_a(mu(Psi_o(s)))||_2`` (``Psi``:
``alf.environments.mirrors.WALKER2D_V5_MIRROR``), also of a fresh policy, for scale.
"""

from __future__ import annotations

import os
import shutil
import statistics
from functools import partial

from benchmarks.harness import cli, report, runner, tb

NAME = "mirror_walker"
CONF = "alf/examples/ppo_mirror_walker_conf.py"
COEFFS = (1.0, 0.0)


def _symmetry_errors(actor, mirror, observations):
    import torch

    from alf.utils import dist_utils

    with torch.no_grad():
        action = dist_utils.get_mode(actor(observations, ())[0])
        mirrored = dist_utils.get_mode(actor(mirror.observation(observations), ())[0])
        return (action - mirror.action(mirrored)).norm(dim=-1)


def measure(root_dir: str, num_episodes: int, seed: int) -> dict:
    """Eval return and symmetry error of ``root_dir``'s final policy (and of a freshly
    initialized one) over deterministic episodes, episode ``i`` from env seed ``1000 + i``.
    The conf has no data transformer, so observations are the env's."""
    import torch

    from alf.algorithms.unroller import AlgorithmPolicy, Unroller
    from alf.bin.play import build_experiment, load_checkpoint
    from alf.data_structures import StepType
    from alf.environments.mirrors import WALKER2D_V5_MIRROR as MIRROR

    env, algorithm = build_experiment(root_dir, seed=seed)
    untrained_state = {k: v.clone() for k, v in algorithm.actor_network.state_dict().items()}
    algorithm.load_state_dict(load_checkpoint(root_dir)["algorithm"])
    returns, observations = [], []

    def observe(time_step):
        if int(time_step.step_type[0]) != StepType.LAST:
            observations.append(time_step.observation[0].clone())

    try:
        for episode in range(num_episodes):
            unroller = Unroller(AlgorithmPolicy(algorithm, "predict"), env)
            unroller.restart(1000 + episode)
            returns.append(float(unroller.run_episodes(1, observe=observe).average_return))
    finally:
        env.close()
    observations = torch.stack(observations)
    trained = _symmetry_errors(algorithm.actor_network, MIRROR, observations)
    algorithm.actor_network.load_state_dict(untrained_state)
    untrained = _symmetry_errors(algorithm.actor_network, MIRROR, observations)
    return {
        "eval_returns": returns,
        "eval_return_mean": statistics.fmean(returns),
        "num_states": int(observations.shape[0]),
        "symmetry_error": float(trained.mean()),
        "symmetry_error_untrained": float(untrained.mean()),
    }


def run_one(args, coeff: float, seed: int) -> list[dict]:
    """Train with ``coeff`` through alf's CLI, then measure the final policy."""
    root_dir = os.path.join(args.work_dir, f"coeff{coeff:g}_seed{seed}")
    shutil.rmtree(root_dir, ignore_errors=True)  # alf would resume an old run
    params = [f"PPOLoss.mirror_loss_coeff={coeff}"]
    params += [f"TrainerConfig.{k}={getattr(args, k)}" for k in ("eval_interval", "num_env_steps")]
    turns = runner.run(runner.alf_train_cmd(CONF, root_dir, seed, params), root_dir + ".log")
    returns = tb.scalars(f"{root_dir}/eval", "Metrics_vs_EnvironmentSteps/AverageReturn")
    run = dict(seed=seed, mirror_loss_coeff=coeff, env_steps=returns[-1][0], wall_s=turns.wall_s)
    kwargs = dict(root_dir=root_dir, num_episodes=args.num_episodes, seed=seed)
    return [
        dict(run, **runner.call("benchmarks.mirror_walker:measure", root_dir + ".json", **kwargs))
    ]


HEADER = "mirror_loss_coeff|seed|env steps|wall s|symmetry error|untrained symmetry error"


def markdown(runs: list[dict]) -> str:
    """The generated block: one row per run and the means per coefficient."""
    rows = []
    for run in runs:
        row = [f"{run['mirror_loss_coeff']:g}", run["seed"], f"{run['env_steps']:,}"]
        row += [report.fmt(run["wall_s"]), f"{run['symmetry_error']:.3f}"]
        row += [f"{run['symmetry_error_untrained']:.3f}", report.fmt(run["eval_return_mean"])]
        rows.append(row + [run["num_states"]])
    lines = [report.table(HEADER.split("|") + ["eval return", "states"], rows)]
    for coeff in COEFFS:
        chosen = [r for r in runs if r["mirror_loss_coeff"] == coeff]
        if chosen:
            lines.append(
                f"\nMean over seeds, coefficient {coeff:g}: symmetry error "
                f"{statistics.fmean(r['symmetry_error'] for r in chosen):.3f}, eval return "
                f"{statistics.fmean(r['eval_return_mean'] for r in chosen):.1f} "
                f"({len(chosen)} seed{'s' if len(chosen) > 1 else ''})."
            )
    return "\n".join(lines)


def main() -> None:
    parser = cli.parser(__doc__, NAME, seeds=(0, 1))
    parser.add_argument("--num_env_steps", type=int, default=100_000)
    parser.add_argument("--eval_interval", type=int, default=40, help="in iterations")
    parser.add_argument("--num_episodes", type=int, default=10)
    args = parser.parse_args()
    jobs = [partial(run_one, args, coeff, seed) for seed in args.seeds for coeff in COEFFS]
    header = dict(num_env_steps=args.num_env_steps, num_episodes=args.num_episodes)
    cli.run(args, NAME, markdown, jobs, **header)


if __name__ == "__main__":
    main()
