"""Train Stable-Baselines3 PPO in its own process, for the alf-vs-SB3 benchmarks.

    python benchmarks/sb3_ppo_worker.py --spec SPEC.json --seed S --out OUT.json

``SPEC.json`` holds ``env_name``, ``num_envs``, ``num_env_steps``, ``eval_every``
(env steps), ``num_eval_episodes``, ``num_eval_envs`` and ``ppo`` (keyword arguments
of ``stable_baselines3.PPO``; ``learning_rate`` / ``clip_range`` may be
``{"linear": v}`` for SB3-zoo's ``lin_v``, i.e. ``v * progress_remaining``, and
``policy_kwargs.activation_fn`` a ``torch.nn`` class name such as ``"ReLU"``) and
``torch_num_threads`` (``torch.set_num_threads``; 0 or absent: torch's default).

Evaluation mirrors alf's trainer: after the update of every iteration that
completes a multiple of ``eval_every`` env steps, and once more at the end, the
deterministic policy plays ``num_eval_episodes`` episodes on a separate
``DummyVecEnv`` of ``num_eval_envs`` envs, reseeded to the same seed before each
evaluation. Each evaluation is timed so the caller can subtract it.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import DummyVecEnv

EVAL_SEED_OFFSET = 999


def _schedule(value):
    """``{"linear": v}`` -> SB3's linear schedule ``v * progress_remaining``."""
    if isinstance(value, dict):
        start = float(value["linear"])
        return lambda progress_remaining: start * progress_remaining
    return value


class TimedEvalCallback(BaseCallback):
    """Evaluates at iteration boundaries; records per-iteration training rates."""

    def __init__(self, eval_env, eval_seed: int, eval_every: int, num_episodes: int):
        super().__init__()
        self._eval_env = eval_env
        self._eval_seed = eval_seed
        self._eval_every = eval_every
        self._num_episodes = num_episodes
        self._last_eval_steps = 0
        self._iter_start = None
        self._iter_start_steps = 0
        self.evals = []
        self.iteration_rates = []
        self.train_stats = []  # SB3's train/* logger values of every update

    def _on_rollout_start(self) -> None:
        # Called after the previous iteration's update: the iteration boundary.
        now = time.time()
        self._record_train_stats()
        if self._iter_start is not None:
            steps = self.num_timesteps - self._iter_start_steps
            self.iteration_rates.append(steps / max(now - self._iter_start, 1e-9))
        if self.num_timesteps // self._eval_every > self._last_eval_steps // self._eval_every:
            self.evaluate()
        self._iter_start = time.time()
        self._iter_start_steps = self.num_timesteps

    def _on_step(self) -> bool:
        return True

    def _record_train_stats(self) -> None:
        """The previous update's ``train/*`` values (SB3 logs them after ``train()``)."""
        values = self.model.logger.name_to_value
        names = ("approx_kl", "clip_fraction", "entropy_loss", "explained_variance")
        if "train/clip_fraction" in values:
            stats = {name: float(values[f"train/{name}"]) for name in names}
            self.train_stats.append({"env_steps": int(self.num_timesteps), **stats})

    def evaluate(self) -> None:
        start = time.time()
        self._eval_env.seed(self._eval_seed)
        mean_return, _ = evaluate_policy(
            self.model, self._eval_env, n_eval_episodes=self._num_episodes, deterministic=True
        )
        end = time.time()
        self._last_eval_steps = self.num_timesteps
        self.evals.append(
            {
                "env_steps": int(self.num_timesteps),
                "average_return": float(mean_return),
                "duration_s": end - start,
                "end_time": end,
            }
        )
        print(f"env steps {self.num_timesteps}: eval return {mean_return:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, help="JSON file with the run's settings")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", required=True, help="JSON file for the results")
    args = parser.parse_args()
    with open(args.spec) as f:
        spec = json.load(f)
    default_num_threads = torch.get_num_threads()
    if spec.get("torch_num_threads", 0) > 0:
        torch.set_num_threads(spec["torch_num_threads"])

    env = make_vec_env(
        spec["env_name"], n_envs=spec["num_envs"], seed=args.seed, vec_env_cls=DummyVecEnv
    )
    eval_seed = args.seed + EVAL_SEED_OFFSET
    eval_env = make_vec_env(
        spec["env_name"], n_envs=spec["num_eval_envs"], seed=eval_seed, vec_env_cls=DummyVecEnv
    )
    kwargs = dict(spec["ppo"])
    for name in ("learning_rate", "clip_range"):
        if name in kwargs:
            kwargs[name] = _schedule(kwargs[name])
    policy_kwargs = dict(kwargs.get("policy_kwargs", {}))
    if "activation_fn" in policy_kwargs:  # a name in JSON, e.g. "ReLU"
        policy_kwargs["activation_fn"] = getattr(torch.nn, policy_kwargs["activation_fn"])
    kwargs["policy_kwargs"] = policy_kwargs
    model = PPO(env=env, seed=args.seed, device="cpu", verbose=0, **kwargs)
    callback = TimedEvalCallback(eval_env, eval_seed, spec["eval_every"], spec["num_eval_episodes"])
    model.learn(total_timesteps=spec["num_env_steps"], callback=callback)
    callback.evaluate()  # final evaluation, as alf's trainer does at the end
    env.close()
    eval_env.close()
    with open(args.out, "w") as f:
        json.dump(
            {
                "env_steps": int(model.num_timesteps),
                "evals": callback.evals,
                "iteration_rates": callback.iteration_rates,
                "train_stats": callback.train_stats,
                "torch_default_num_threads": default_num_threads,
                "torch_num_threads": torch.get_num_threads(),
            },
            f,
            indent=1,
        )


if __name__ == "__main__":
    main()
