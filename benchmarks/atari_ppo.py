"""PPO on an Atari game for a budget of frames: alf's returns, and SB3's at the same frames.

    python -m benchmarks.atari_ppo [--env BreakoutNoFrameskip-v4] [--frames 1000000]
        [--seeds 0] [--num_threads 2] [--sb3] [--report_only] [--no_write]

alf trains ``alf/examples/ppo_breakout_conf.py`` (rl-baselines3-zoo's Atari PPO settings; its
learning-rate and clip-range schedules follow the 10M-step run whatever the budget) on
``--env`` for ``frames / 4`` agent steps, then evaluates 10 whole games (the trainer's final
evaluation). Reported: the frames per second of the whole run (start-up and the final
evaluation included), the training ``AverageReturn`` (the last 10 whole games, unclipped
scores) along the way and at the end, and the final evaluation's return.

``--sb3`` also trains Stable-Baselines3 PPO with the same rl-zoo settings (``make_atari_env``:
``AtariWrapper`` with terminal-on-life-loss and sign-clipped rewards, ``VecFrameStack(4)``,
``CnnPolicy``, its schedules also following the 10M-step run) for the same frames, at the
same time as alf (two processes, ``--num_threads`` each), and reports the same numbers from
its ``Monitor`` (whole games, unclipped) and a final 10-game deterministic evaluation.
SB3's ``AtariWrapper`` needs OpenCV: ``pip install opencv-python-headless`` (not an alf extra).

Published references. ``PUBLISHED``: rl-baselines3-zoo's ``benchmark.md`` gives the final
scores of its trained agents, after 10M agent steps (40M frames): PPO BreakoutNoFrameskip-v4
398.0 +/- 33.3 (60 episodes), PongNoFrameskip-v4 21.0 +/- 0.1 (90 episodes).
``PUBLISHED_CURVE``: the training curve of that Breakout agent, from the ``Monitor`` logs
published with it (``benchmarks/zoo_curve.py`` says how): per window of 250k frames, the
games that ended in it and their mean score, and the mean of the last 10 games ended by the
window's end, which is the statistic of alf's training ``AverageReturn``. The report puts
alf's training ``AverageReturn`` at each window's end (its last iteration at or before it)
beside them.
"""

from __future__ import annotations

import os
import subprocess
import time

from benchmarks.harness import cli, report, runner, tb

CONF = "alf/examples/ppo_breakout_conf.py"
FRAME_SKIP = 4
NUM_ENVS, UNROLL = 8, 128  # the conf's: one iteration is 1,024 agent steps
TOTAL_ENV_STEPS = 10_000_000  # rl-zoo's budget, over which the schedules decay
NUM_EVAL_EPISODES = 10
PUBLISHED = {
    "BreakoutNoFrameskip-v4": dict(mean=398.033, std=33.328, episodes=60),
    "PongNoFrameskip-v4": dict(mean=20.989, std=0.105, episodes=90),
}
PUBLISHED_SOURCE = (
    "rl-baselines3-zoo benchmark.md (PPO, 10M agent steps = 40M frames, trained agent's "
    "deterministic evaluation)"
)

#: rl-baselines3-zoo's trained PPO BreakoutNoFrameskip-v4 agent (rl-zoo's Atari PPO settings,
#: 8 envs, the schedules over 10M agent steps, as ``ppo_breakout_conf.py``): its training
#: games, from ``ppo/BreakoutNoFrameskip-v4_1/{0..7}.monitor.csv`` of the GitHub repository
#: DLR-RM/rl-trained-agents (added in commit 83f477ed1dcd634b5132ff8dce41e6987cf7e5e8, the
#: same files at 60fac6404448c7c9e5c4abe91e8e5aef099d107e), by ``python -m
#: benchmarks.zoo_curve DIR`` (DIR holding those 8 files; whole games, raw scores; a game
#: ending when its env has run F frames counts at 8 * F frames). Rows: (window end in
#: frames, games ended in the 250k frames up to it, their mean score, mean of the last 10
#: games ended by then).
PUBLISHED_WINDOW = 250_000
PUBLISHED_CURVE = {
    "BreakoutNoFrameskip-v4": (
        (250_000, 294, 1.99, 3.6),
        (500_000, 234, 3.61, 6.9),
        (750_000, 173, 7.16, 7.2),
        (1_000_000, 140, 9.53, 11.0),
        (1_250_000, 125, 11.57, 14.2),
        (1_500_000, 119, 13.24, 9.9),
        (1_750_000, 112, 13.38, 13.2),
        (2_000_000, 112, 14.43, 17.3),
        (2_250_000, 99, 16.37, 18.2),
        (2_500_000, 96, 17.78, 20.3),
        (2_750_000, 87, 20.78, 20.0),
        (3_000_000, 86, 21.4, 22.9),
        (3_250_000, 89, 20.82, 22.0),
        (3_500_000, 78, 23.4, 26.8),
        (3_750_000, 83, 22.98, 29.0),
        (4_000_000, 79, 25.41, 27.7),
    )
}
PUBLISHED_CURVE_SOURCE = (
    "rl-baselines3-zoo's trained PPO agent's training Monitor logs (GitHub DLR-RM/"
    "rl-trained-agents, ppo/BreakoutNoFrameskip-v4_1/*.monitor.csv, commit 83f477ed)"
)


def alf_params(env_name: str, env_steps: int, num_threads: int) -> list[str]:
    iterations = max(1, env_steps // (NUM_ENVS * UNROLL))
    return [
        f"create_environment.env_name='{env_name}'",
        f"TrainerConfig.num_iterations={iterations}",
        f"TrainerConfig.num_env_steps={iterations * NUM_ENVS * UNROLL}",
        f"TrainerConfig.eval_interval={iterations + 1}",  # only the final evaluation
        f"TrainerConfig.num_eval_episodes={NUM_EVAL_EPISODES}",
        f"TrainerConfig.num_threads={num_threads}",
        "TrainerConfig.num_checkpoints=1",
        "TrainerConfig.summary_interval=1",  # the curve, and the last iteration's metrics
    ]


def alf_result(root_dir: str, env_name: str, seed: int, wall_s: float) -> dict:
    curve = tb.scalars(os.path.join(root_dir, "train"), "Metrics_vs_EnvironmentSteps/AverageReturn")
    evals = tb.scalars(os.path.join(root_dir, "eval"), "Metrics/AverageReturn")
    env_steps = tb.scalars(os.path.join(root_dir, "train"), "Metrics/EnvironmentSteps")
    steps = int(env_steps[-1][2]) if env_steps else (curve[-1][0] if curve else 0)
    return _record("alf", env_name, seed, steps, wall_s, curve, evals[-1][2] if evals else None)


def _record(framework, env_name, seed, steps, wall_s, curve, eval_return) -> dict:
    frames = steps * FRAME_SKIP
    return dict(
        framework=framework,
        env=env_name,
        seed=seed,
        frames=frames,
        wall_s=wall_s,
        fps=frames / wall_s if wall_s else None,
        train_return=curve[-1][-1] if curve else None,
        eval_return=eval_return,
        curve=[[int(s) * FRAME_SKIP, float(v)] for s, *_, v in curve],
    )


def sb3_learn(env_name: str, env_steps: int, seed: int, num_threads: int) -> dict:
    """SB3 PPO with rl-zoo's Atari settings for ``env_steps`` agent steps (fresh process)."""
    import ale_py  # noqa: F401 (registers the ALE ids)
    import numpy as np
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecFrameStack

    torch.set_num_threads(num_threads)
    start = time.time()

    def over_10m(value: float):
        # SB3 passes progress_remaining over this run's budget; decay over the 10M run.
        return lambda remaining: value * (1 - (1 - remaining) * env_steps / TOTAL_ENV_STEPS)

    env = VecFrameStack(make_atari_env(env_name, n_envs=NUM_ENVS, seed=seed), n_stack=4)
    games = []

    class Games(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    games.append((self.num_timesteps, float(info["episode"]["r"])))
            return True

    model = PPO(
        "CnnPolicy",
        env,
        n_steps=UNROLL,
        n_epochs=4,
        batch_size=256,
        learning_rate=over_10m(2.5e-4),
        clip_range=over_10m(0.1),
        vf_coef=0.5,
        ent_coef=0.01,
        seed=seed,
        device="cpu",
    )
    model.learn(env_steps, callback=Games())
    eval_env = VecFrameStack(make_atari_env(env_name, n_envs=1, seed=seed + 999), n_stack=4)
    mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=NUM_EVAL_EPISODES)
    # The training curve as alf reports it: the mean of the last 10 games, per 10 iterations.
    curve = []
    for steps in range(10 * NUM_ENVS * UNROLL, model.num_timesteps + 1, 10 * NUM_ENVS * UNROLL):
        last = [r for s, r in games if s <= steps][-10:]
        if last:
            curve.append((steps, float(np.mean(last))))
    wall = time.time() - start
    return _record("sb3", env_name, seed, model.num_timesteps, wall, curve, float(mean))


def runs_of_seed(args, seed: int) -> list[dict]:
    env_steps = args.frames // FRAME_SKIP
    root_dir = os.path.join(args.work_dir, f"alf-{args.env}-s{seed}")
    params = alf_params(args.env, env_steps, args.num_threads)
    alf_cmd = runner.alf_train_cmd(CONF, root_dir, seed, params) + ["--nostore_snapshot"]
    procs = [("alf", alf_cmd, os.path.join(args.work_dir, f"alf-s{seed}.log"))]
    sb3_out = os.path.join(args.work_dir, f"sb3-s{seed}.json")
    if args.sb3:
        kwargs = dict(env_name=args.env, env_steps=env_steps, seed=seed)
        cmd = runner.function_cmd(
            "benchmarks.atari_ppo:sb3_learn", sb3_out, num_threads=args.num_threads, **kwargs
        )
        procs.append(("sb3", cmd, sb3_out + ".log"))
    started, walls = time.time(), {}
    running = []
    for name, cmd, log in procs:
        out = open(log, "w")  # noqa: SIM115 (closed below)
        proc = subprocess.Popen(
            cmd, cwd=runner.REPO_DIR, env=runner.checkout_env(), stdout=out, stderr=out
        )
        running.append((name, cmd, log, out, proc))
    for name, cmd, log, out, proc in running:
        proc.wait()
        out.close()
        walls[name] = time.time() - started
        runner.check_exit(cmd, log, proc.returncode)
    runs = [alf_result(root_dir, args.env, seed, walls["alf"])]
    if args.sb3:
        runs.append(report.read_json(sb3_out))
    return runs


def markdown(runs: list[dict]) -> str:
    header = ["framework", "env", "seed", "frames", "wall s", "frames/s", "train return"]
    header += ["eval return (10 games)", "published SB3 (40M frames)"]
    rows = []
    for r in runs:
        published = PUBLISHED.get(r["env"])
        ref = f"{published['mean']:.1f} ± {published['std']:.1f}" if published else "-"
        rows.append(
            [
                r["framework"],
                r["env"],
                r["seed"],
                report.fmt(r["frames"]),
                report.fmt(r["wall_s"], 0),
            ]
            + [report.fmt(r["fps"], 0), report.fmt(r["train_return"], 1)]
            + [report.fmt(r["eval_return"], 1), ref]
        )
    text = report.table(header, rows) + f"\n\nPublished: {PUBLISHED_SOURCE}.\n"
    for r in runs:
        curve = curve_rows(r)
        if curve:
            name = r["framework"]
            header = ["frames", f"{name} train return (last 10 games)", "zoo: last 10 games"]
            header += [f"{name}: mean over the window", "zoo: games in window", "zoo: their mean"]
            text += f"\n{r['framework']} seed {r['seed']} against the published curve:\n\n"
            text += report.table(header, curve) + "\n"
    if any(curve_rows(r) for r in runs):
        text += f"\nPublished curve: {PUBLISHED_CURVE_SOURCE}.\n"
    return text


def curve_rows(run: dict) -> list[list[str]]:
    """Per published window ``(end - 250k, end]`` ending within the run: the run's training
    return at its last curve point at or before ``end``, the published last-10-games mean,
    the mean of the run's curve points in the window (a smoother view: each point is itself
    a mean of 10 games), and the published games and mean score in the window."""
    rows = []
    window = PUBLISHED_WINDOW
    curve = run.get("curve") or ()
    for end, games, mean, last in PUBLISHED_CURVE.get(run["env"], ()):
        before = [v for frames, v in curve if frames <= end]
        inside = [v for frames, v in curve if end - window < frames <= end]
        if end > run["frames"] or not before:
            continue
        smooth = sum(inside) / len(inside) if inside else None
        rows.append(
            [report.fmt(end), report.fmt(before[-1], 1), report.fmt(last, 1)]
            + [report.fmt(smooth, 2), report.fmt(games), report.fmt(mean, 2)]
        )
    return rows


def main() -> None:
    parser = cli.parser(__doc__, "atari_ppo", seeds=(0,))
    parser.add_argument("--env", default="BreakoutNoFrameskip-v4")
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--num_threads", type=int, default=2)
    parser.add_argument("--sb3", action="store_true", help="also train SB3 at the same time")
    args = parser.parse_args()
    jobs = [lambda seed=seed: runs_of_seed(args, seed) for seed in args.seeds]
    cli.run(args, "atari_ppo", markdown, jobs, env=args.env, frames=args.frames)


if __name__ == "__main__":
    main()
