"""PPO on CartPole-v1 by hand, no framework: the floor alf's PPO is timed against.

``alf/examples/ppo_cart_pole_conf.py``'s algorithm and hyperparameters, on alf's conventions:
8 envs in one process (``SyncVectorEnv``, env ``i`` seeded ``seed + i``) whose next-step
auto-reset is alf's LAST-then-FIRST (the LAST row is masked out of the loss); per iteration 32
steps of every env and the bootstrap value; GAE (gamma 0.98, λ 0.8) not across an episode's end,
a time-limit end bootstrapped; 20 epochs over the 256 rows at once; advantages normalized over
the valid rows; clipped surrogate 0.2, value loss ``0.5 (G - V)^2``; one fused Adam (eps 1e-5)
over both 4-64-64 tanh MLPs (orthogonal init, logits a truncated normal of std 0.01/√64), norm
clipped to 0.5; lr and clipping decaying linearly to 0; subnormals flushed. Timed per
iteration: rollout (steps, bootstrap value, conversions), update (GAE, epochs) and bookkeeping
(episode returns), after the first ``warmup_steps`` env steps.
"""

from __future__ import annotations

import collections
import math
import time

import numpy as np
import torch
from torch import nn

from benchmarks.harness import phases

#: alf/examples/ppo_cart_pole_conf.py (tests/benchmarks/test_floor.py checks them against it)
PPO = dict(env_name="CartPole-v1", num_envs=8, unroll_length=32, epochs=20, mini_batch_size=256)
PPO.update(gamma=0.98, gae_lambda=0.8, lr=1e-3, clip=0.2, vf_coef=0.5, ent_coef=0.0)
PPO.update(max_grad_norm=0.5, adam_eps=1e-5, hidden=(64, 64), env_steps=100_000)
ENV_STEPS = PPO["env_steps"]
WARMUP_STEPS = 512  # two iterations
TRUNCATED_NORMAL_STD = 0.87962566103423978  # std of a unit normal cut at ±2


def mlp(sizes, out_gain: float | None) -> nn.Sequential:
    """tanh MLP, hidden weights orthogonal (gain √2), biases 0; the output layer orthogonal
    with ``out_gain``, or (None) a truncated normal of std ``0.01 / sqrt(fan_in)``."""
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(n_in, n_out), nn.Tanh()]
        nn.init.zeros_(layers[-2].bias)
    layers.pop()
    for layer in layers[:-1:2]:
        nn.init.orthogonal_(layer.weight, gain=math.sqrt(2))
    if out_gain is None:
        std = 0.01 / math.sqrt(sizes[-2]) / TRUNCATED_NORMAL_STD
        nn.init.trunc_normal_(layers[-1].weight, 0.0, std, -2 * std, 2 * std)
    else:
        nn.init.orthogonal_(layers[-1].weight, gain=out_gain)
    return nn.Sequential(*layers)


def gae(rewards, values, last, discounts, gamma: float, lam: float) -> np.ndarray:
    """GAE advantages ``[T, B]`` of rows ``0..T-1`` from ``[T+1, B]`` arrays in alf's
    time-step convention: row ``t`` holds the reward and discount (0 after a termination,
    else 1) of arriving at observation ``t``, its value ``V_t``, and whether it is an
    episode's last observation (its action is ignored: advantage 0, nothing flows across)."""
    num_steps = values.shape[0] - 1
    advantages = np.zeros((num_steps, values.shape[1]), np.float32)
    acc = np.zeros(values.shape[1], np.float32)
    for t in range(num_steps - 1, -1, -1):
        g = gamma * discounts[t + 1]
        delta = rewards[t + 1] + g * values[t + 1] - values[t]
        acc = np.where(~last[t], delta + g * lam * acc, 0.0).astype(np.float32)
        advantages[t] = acc
    return advantages


def normalize(advantages: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Zero mean, unit std (unbiased) over the valid rows, 0 elsewhere."""
    count = valid.sum().clamp(min=1.0)
    centred = (advantages - (advantages * valid).sum() / count) * valid
    std = ((centred**2).sum() / (count - 1).clamp(min=1.0)).sqrt()
    return centred / (std + 1e-8)


class Rollout:
    """The unroll buffers ``[T+1, B]`` (row T: the bootstrap row) and the envs' state."""

    def __init__(self, envs, seed: int, cfg: dict):
        steps, num_envs = cfg["unroll_length"], cfg["num_envs"]
        self.envs = envs
        self.obs = torch.from_numpy(envs.reset(seed=[seed + i for i in range(num_envs)])[0])
        self.reward = np.zeros(num_envs, np.float32)
        self.discount = np.ones(num_envs, np.float32)
        self.last = np.zeros(num_envs, bool)
        rows = (steps + 1, num_envs)
        self.observations = torch.zeros(rows + self.obs.shape[1:])
        self.actions = torch.zeros(steps, num_envs, dtype=torch.int64)
        self.log_probs, self.values = torch.zeros(steps, num_envs), torch.zeros(rows)
        self.rewards, self.discounts = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
        self.lasts = np.zeros(rows, bool)

    def _record(self, t: int, value) -> None:
        self.observations[t], self.values[t] = self.obs, value
        self.rewards[t], self.discounts[t], self.lasts[t] = self.reward, self.discount, self.last

    @torch.inference_mode()
    def unroll(self, actor: nn.Module, critic: nn.Module) -> None:
        for t in range(self.actions.shape[0]):
            value = critic(self.obs).squeeze(-1)
            log_probs = actor(self.obs).log_softmax(-1)
            action = torch.multinomial(log_probs.exp(), 1)
            self._record(t, value)
            self.actions[t] = action.squeeze(-1)
            self.log_probs[t] = log_probs.gather(-1, action).squeeze(-1)
            obs, reward, terminated, truncated, _ = self.envs.step(action.squeeze(-1).numpy())
            self.obs = torch.from_numpy(obs)
            self.reward = reward.astype(np.float32)
            self.discount = (~terminated).astype(np.float32)
            self.last = terminated | truncated
        self._record(self.actions.shape[0], critic(self.obs).squeeze(-1))


def minibatches(num_rows: int, size: int):
    """Index sets of one epoch: all rows at once when they fit, else a random permutation."""
    if size >= num_rows:
        yield slice(None)
        return
    perm = torch.randperm(num_rows)
    for start in range(0, num_rows, size):
        yield perm[start : start + size]


def update(actor, critic, optimizer, params, data: Rollout, cfg: dict, progress: float) -> None:
    """PPO's epochs on the unroll (module doc)."""
    steps = data.actions.shape[0]
    unroll = data.rewards, data.values.numpy(), data.lasts, data.discounts
    advantages = torch.from_numpy(gae(*unroll, cfg["gamma"], cfg["gae_lambda"])).flatten()
    returns = advantages + data.values[:steps].flatten()
    valid = torch.from_numpy(~data.lasts[:steps]).flatten().float()
    obs = data.observations[:steps].flatten(0, 1)
    actions, old_log_probs = data.actions.flatten(), data.log_probs.flatten()
    clip = cfg["clip"] * (1.0 - progress)
    for group in optimizer.param_groups:
        group["lr"] = cfg["lr"] * (1.0 - progress)
    for _ in range(cfg["epochs"]):
        for rows in minibatches(obs.shape[0], cfg["mini_batch_size"]):
            mask = valid[rows]
            log_prob = actor(obs[rows]).log_softmax(-1).gather(-1, actions[rows, None]).squeeze(-1)
            value = critic(obs[rows]).squeeze(-1)
            neg_adv = -normalize(advantages[rows], mask)
            ratio = torch.exp(log_prob - old_log_probs[rows])
            pg_loss = torch.maximum(neg_adv * ratio, neg_adv * ratio.clamp(1 - clip, 1 + clip))
            loss = pg_loss + cfg["vf_coef"] * (returns[rows] - value) ** 2
            loss = (loss * mask).sum() / mask.sum().clamp(min=1.0)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(params, cfg["max_grad_norm"])
            optimizer.step()


def run(seed=0, env_steps=ENV_STEPS, num_threads=1, warmup_steps=WARMUP_STEPS,
        matmul_precision="highest") -> dict:  # fmt: skip
    """Train (see the module doc); the run's ``phases.result`` record."""
    import gymnasium as gym

    cfg, obs_size, hidden = PPO, 4, PPO["hidden"]
    phases.setup_torch(seed, num_threads, matmul_precision)
    torch.set_flush_denormal(True)
    actor, critic = mlp((obs_size, *hidden, 2), None), mlp((obs_size, *hidden, 1), 1.0)
    params = [*actor.parameters(), *critic.parameters()]
    optimizer = torch.optim.Adam(params, lr=cfg["lr"], eps=cfg["adam_eps"], fused=True)
    envs = gym.make_vec(cfg["env_name"], num_envs=cfg["num_envs"], vectorization_mode="sync")
    data, per_iteration = Rollout(envs, seed, cfg), cfg["num_envs"] * cfg["unroll_length"]
    running, finished = np.zeros(cfg["num_envs"]), collections.deque(maxlen=10)
    totals, done, timed_from = dict.fromkeys(phases.PHASES, 0.0), 0, None
    cpu = time.process_time()
    while done < env_steps:
        if timed_from is None and done >= warmup_steps:
            timed_from, totals, cpu = done, dict.fromkeys(phases.PHASES, 0.0), time.process_time()
        t0 = time.perf_counter()
        data.unroll(actor, critic)
        t1 = time.perf_counter()
        update(actor, critic, optimizer, params, data, cfg, done / env_steps)
        t2 = time.perf_counter()
        done += per_iteration
        for reward, last in zip(data.rewards[1:], data.lasts[1:]):  # the episode returns
            running += reward
            finished.extend(running[last].tolist())
            running[last] = 0.0
        t3 = time.perf_counter()
        for phase, seconds in zip(phases.PHASES, (t1 - t0, t2 - t1, t3 - t2)):
            totals[phase] += seconds
    cpu = time.process_time() - cpu
    envs.close()
    timed_steps = done - (timed_from or 0)  # all of them when the warm-up is the whole run
    final = float(np.mean(finished)) if finished else None
    return phases.result(
        "floor", "ppo_cart_pole", seed, done, timed_steps, totals, cpu,
        num_threads=num_threads, final_train_return=final,
    )  # fmt: skip
