"""Stable-Baselines3's side of the alf-vs-SB3 benchmarks, run in its own process.

``task`` is a ``tasks.Task`` as a dict. PPO and (QR-)DQN evaluate after the update of each iteration
that completes a multiple of ``eval_every`` env steps and at the end (as alf's trainer), on a
vector env of 10; SAC every ``eval_every`` env steps on one env; all reseed the eval env each time.
With ``task["normalize"]`` (PPO) the training env is wrapped in ``VecNormalize`` (gamma the
algorithm's) and the eval env evaluates with a frozen copy of its observation statistics and raw
rewards, as rl-baselines3-zoo does.
"""

from __future__ import annotations

import importlib
import time
from functools import partial

from benchmarks.harness import steady


def _linear(start: float, progress_remaining: float) -> float:
    return start * progress_remaining


def model(task: dict, seed: int, **overrides):
    """SB3's DQN, PPO or SAC (or ``task["sb3_class"]``) for ``task`` (``{"linear": v}``
    schedules, activations by name)."""
    import gymnasium as gym
    import torch
    from stable_baselines3 import DQN, PPO, SAC
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import VecNormalize

    torch.set_num_threads(1)
    kwargs = dict(task["sb3"], **overrides)
    policy_kwargs = dict(kwargs.pop("policy_kwargs", {}))
    if "activation_fn" in policy_kwargs:
        policy_kwargs["activation_fn"] = getattr(torch.nn, policy_kwargs["activation_fn"])
    if task["algorithm"] == "ppo":
        for name in ("learning_rate", "clip_range"):
            if isinstance(kwargs[name], dict):
                kwargs[name] = partial(_linear, float(kwargs[name]["linear"]))
        env = make_vec_env(task["env_name"], n_envs=task["num_envs"], seed=seed)
        if task.get("normalize"):  # the zoo's ``normalize: true``, its gamma the algorithm's
            env = VecNormalize(env, gamma=kwargs.get("gamma", 0.99))
    else:
        env = gym.make(task["env_name"])
    algorithm = dict(dqn=DQN, ppo=PPO, sac=SAC)[task["algorithm"]]
    if task.get("sb3_class"):  # e.g. "sb3_contrib:CrossQ"
        module, name = task["sb3_class"].split(":")
        algorithm = getattr(importlib.import_module(module), name)
    kwargs.update(seed=seed, device="cpu", policy_kwargs=policy_kwargs)
    sb3_model = algorithm("MlpPolicy", env, **kwargs)
    # SB3's logger at verbose 0, without the empty /tmp/SB3-<time> folder it makes per learn()
    sb3_model.set_logger(Logger(None, []))
    return sb3_model


def learn(task: dict, seed: int) -> dict:
    """A learning run: its evaluations as ``[env_steps, return, wall-clock start, end]`` and its
    update count."""
    import gymnasium as gym
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecNormalize, sync_envs_normalization

    eval_seed, every = seed + 999, task["eval_every"]
    iterative = task["algorithm"] != "sac"  # PPO and DQN: evaluate at an iteration's start
    if iterative:
        eval_env = make_vec_env(task["env_name"], n_envs=10, seed=eval_seed)
        if task.get("normalize"):  # as the zoo: frozen observation statistics, raw rewards
            eval_env = VecNormalize(eval_env, training=False, norm_reward=False)
    else:
        eval_env = gym.make(task["env_name"])
    evals = []

    def evaluate(sb3_model):
        start = time.time()
        if task.get("normalize"):  # the training env's statistics as they are now
            sync_envs_normalization(sb3_model.get_env(), eval_env)
        eval_env.seed(eval_seed) if iterative else eval_env.reset(seed=eval_seed)
        n = task["num_eval_episodes"]
        mean, _ = evaluate_policy(sb3_model, eval_env, n_eval_episodes=n, deterministic=True)
        evals.append([sb3_model.num_timesteps, float(mean), start, time.time()])

    class Callback(BaseCallback):
        last_eval = 0

        def _on_rollout_start(self) -> None:  # PPO: the previous iteration's update is done
            if iterative and self.num_timesteps // every > self.last_eval // every:
                evaluate(self.model)
                self.last_eval = self.num_timesteps

        def _on_step(self) -> bool:
            if not iterative and self.num_timesteps % every == 0:
                evaluate(self.model)
            return True

    sb3_model = model(task, seed)
    sb3_model.learn(task["env_steps"], callback=Callback())
    if iterative:
        evaluate(sb3_model)
    return dict(env_steps=sb3_model.num_timesteps, updates=int(sb3_model._n_updates), evals=evals)


def steady_state(task: dict, seed: int, iterations: int, flush_denormal: bool) -> dict:
    """Time ``iterations`` after a warm-up (PPO: 2 iterations; SAC: ``steady_starts + 200``;
    DQN: ``learning_starts`` and 2 training phases of ``train_freq`` steps)."""
    import torch

    torch.set_flush_denormal(flush_denormal)
    if task["algorithm"] == "sac":
        sb3_model = model(task, seed, learning_starts=task["steady_starts"])
        warmup, steps = task["steady_starts"] + 200, iterations
    elif task["algorithm"] == "dqn":
        sb3_model = model(task, seed)
        per_iteration = sb3_model.train_freq.frequency
        warmup = sb3_model.learning_starts + 2 * per_iteration
        steps = iterations * per_iteration
    else:
        sb3_model = model(task, seed)
        per_iteration = sb3_model.n_steps * sb3_model.n_envs
        warmup, steps = 2 * per_iteration, iterations * per_iteration
    sb3_model.learn(warmup)

    def train() -> int:
        sb3_model.learn(steps, reset_num_timesteps=False)
        return steps

    return steady.time_calls(train, 0, 1)
