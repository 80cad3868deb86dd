"""PPO on CartPole-v1 written by hand, no framework: the floor alf's PPO is timed against.

    python -m benchmarks.floor_ppo [--env_steps 100000] [--seed 0] [--num_threads 1]

The algorithm and every hyperparameter are those of ``alf/examples/ppo_cart_pole_conf.py``
(what ``benchmarks/ppo_cart_pole.py`` measures; rl-baselines3-zoo's CartPole-v1 settings), and
the data follow alf's conventions, so both compute the same thing on the same data:

- 8 CartPole-v1 envs in one process (gymnasium's ``SyncVectorEnv``, env ``i`` seeded
  ``seed + i``), whose default next-step auto-reset is alf's: the step after an episode's last
  one ignores its action and returns the first observation of the next episode with reward 0.
  Such a row (alf's LAST step) is kept but masked out of the loss, as alf does;
- each iteration: 32 steps of every env (policy forward, sampled action, env step), then the
  bootstrap value of the current observation; GAE with gamma 0.98, lambda 0.8, no advantage
  across an episode's end, a terminal step not bootstrapped and a time-limit one bootstrapped
  from the value of its final observation; λ-returns ``A + V`` as value targets;
- 20 epochs of minibatches of 256 rows (here one minibatch: all 256 rows of the unroll, as
  alf takes it, unshuffled); advantages normalized over the minibatch's valid rows; clipped
  surrogate with ratio clipping 0.2, value loss ``0.5 (G - V)^2``, no entropy bonus, the
  masked mean over valid rows; one Adam (eps 1e-5, torch's fused kernel as alf's) over both
  networks, gradients clipped to global norm 0.5; learning rate 1e-3 and clipping 0.2 both
  decaying linearly to 0 over ``env_steps`` (set from the progress at the iteration's start);
- separate actor and value MLPs 4-64-64 with tanh, orthogonal init (gain √2, biases 0), the
  logits layer a truncated normal of std 0.01/√64 (alf's ``logits_init_output_factor``), the
  value layer orthogonal with gain 1; subnormal floats flushed to zero (alf's default).

Timed per iteration with ``time.perf_counter``: rollout (the 32 steps and the bootstrap value,
numpy/torch conversions included), update (GAE, minibatches, forward, backward, Adam) and
bookkeeping (episode returns from the iteration's rewards). The first ``--warmup_steps`` env
steps are not timed; the final evaluation (greedy policy, ``--eval_episodes`` episodes) is timed
apart and left out.
"""

from __future__ import annotations

import argparse
import collections
import math
import time

import numpy as np
import torch
from torch import nn

from benchmarks.harness import phases

#: alf/examples/ppo_cart_pole_conf.py (tests/benchmarks/test_floor.py checks them against it)
PPO = dict(
    env_name="CartPole-v1",
    num_envs=8,
    unroll_length=32,
    epochs=20,
    mini_batch_size=256,
    gamma=0.98,
    gae_lambda=0.8,
    lr=1e-3,
    clip=0.2,
    vf_coef=0.5,
    ent_coef=0.0,
    max_grad_norm=0.5,
    adam_eps=1e-5,
    hidden=(64, 64),
    env_steps=100_000,
)
WARMUP_STEPS = 512  # two iterations
TRUNCATED_NORMAL_STD = 0.87962566103423978  # std of a unit normal cut at ±2


def mlp(sizes, out_gain: float | None) -> nn.Sequential:
    """tanh MLP, hidden weights orthogonal (gain √2), biases 0; the output layer orthogonal
    with ``out_gain``, or (None) a truncated normal of std ``0.01 / sqrt(fan_in)``."""
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layer = nn.Linear(n_in, n_out)
        nn.init.zeros_(layer.bias)
        layers += [layer, nn.Tanh()]
    layers.pop()
    for layer in layers[:-1:2]:
        nn.init.orthogonal_(layer.weight, gain=math.sqrt(2))
    last = layers[-1]
    if out_gain is None:
        std = 0.01 / math.sqrt(sizes[-2]) / TRUNCATED_NORMAL_STD
        nn.init.trunc_normal_(last.weight, 0.0, std, -2 * std, 2 * std)
    else:
        nn.init.orthogonal_(last.weight, gain=out_gain)
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
        live = ~last[t]
        g = gamma * discounts[t + 1]
        delta = rewards[t + 1] + g * values[t + 1] - values[t]
        acc = np.where(live, delta + g * lam * acc, 0.0).astype(np.float32)
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
        obs, _ = envs.reset(seed=[seed + i for i in range(num_envs)])
        self.obs = torch.from_numpy(obs)
        self.reward = np.zeros(num_envs, np.float32)
        self.discount = np.ones(num_envs, np.float32)
        self.last = np.zeros(num_envs, bool)
        rows = (steps + 1, num_envs)
        self.observations = torch.zeros(rows + self.obs.shape[1:])
        self.actions = torch.zeros(rows[0] - 1, num_envs, dtype=torch.int64)
        self.log_probs = torch.zeros(rows[0] - 1, num_envs)
        self.values = torch.zeros(rows)
        self.rewards = np.zeros(rows, np.float32)
        self.discounts = np.zeros(rows, np.float32)
        self.lasts = np.zeros(rows, bool)

    def _record(self, t: int, value) -> None:
        self.observations[t] = self.obs
        self.values[t] = value
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
    values, gamma, lam = data.values.numpy(), cfg["gamma"], cfg["gae_lambda"]
    advantages = gae(data.rewards, values, data.lasts, data.discounts, gamma, lam)
    advantages = torch.from_numpy(advantages).flatten()
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


class EpisodeReturns:
    """Returns of finished episodes from an unroll's rows (bookkeeping)."""

    def __init__(self, num_envs: int):
        self.running = np.zeros(num_envs)
        self.finished = collections.deque(maxlen=10)

    def add(self, rewards: np.ndarray, lasts: np.ndarray) -> None:
        for reward, last in zip(rewards, lasts):  # rows 1..T: new this iteration
            self.running += reward
            if last.any():
                self.finished.extend(self.running[last].tolist())
                self.running[last] = 0.0

    def average(self) -> float | None:
        return float(np.mean(self.finished)) if self.finished else None


@torch.inference_mode()
def evaluate(actor: nn.Module, env_name: str, episodes: int, seed: int) -> float | None:
    """Mean return of ``episodes`` episodes of the greedy policy on one env."""
    import gymnasium as gym

    if episodes <= 0:
        return None
    env, returns = gym.make(env_name), []
    for i in range(episodes):
        obs, _ = env.reset(seed=seed + i)
        total, done = 0.0, False
        while not done:
            action = int(actor(torch.from_numpy(obs)).argmax())
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def run(
    seed: int = 0,
    env_steps: int = PPO["env_steps"],
    num_threads: int = 1,
    warmup_steps: int = WARMUP_STEPS,
    eval_episodes: int = 10,
    log_every: int = 0,
    matmul_precision: str = "highest",
) -> dict:
    """Train (see the module doc); the run's ``phases.result`` record, with the training
    return curve ``[env steps, mean return of the last 10 episodes]`` every 5,120 env steps."""
    import gymnasium as gym

    cfg = PPO
    torch.set_num_threads(num_threads)
    torch.set_float32_matmul_precision(matmul_precision)
    torch.set_flush_denormal(True)
    torch.manual_seed(seed)
    obs_size, hidden = 4, cfg["hidden"]
    actor, critic = mlp((obs_size, *hidden, 2), None), mlp((obs_size, *hidden, 1), 1.0)
    params = [*actor.parameters(), *critic.parameters()]
    optimizer = torch.optim.Adam(params, lr=cfg["lr"], eps=cfg["adam_eps"], fused=True)
    envs = gym.make_vec(cfg["env_name"], num_envs=cfg["num_envs"], vectorization_mode="sync")
    data, returns = Rollout(envs, seed, cfg), EpisodeReturns(cfg["num_envs"])
    per_iteration = cfg["num_envs"] * cfg["unroll_length"]
    totals, curve, done = dict.fromkeys(phases.PHASES, 0.0), [], 0
    timed_from, cpu = None, time.process_time()
    while done < env_steps:
        if timed_from is None and done >= warmup_steps:
            timed_from, totals = done, dict.fromkeys(phases.PHASES, 0.0)
            cpu = time.process_time()
        t0 = time.perf_counter()
        data.unroll(actor, critic)
        t1 = time.perf_counter()
        update(actor, critic, optimizer, params, data, cfg, done / env_steps)
        t2 = time.perf_counter()
        done += per_iteration
        returns.add(data.rewards[1:], data.lasts[1:])
        if done % 5120 == 0 or done >= env_steps:
            curve.append([done, returns.average()])
            if log_every and len(curve) % log_every == 0:
                print(f"{done} env steps: training return {returns.average()}", flush=True)
        t3 = time.perf_counter()
        for phase, seconds in zip(phases.PHASES, (t1 - t0, t2 - t1, t3 - t2)):
            totals[phase] += seconds
    cpu = time.process_time() - cpu
    envs.close()
    start = time.perf_counter()
    final_eval = evaluate(actor, cfg["env_name"], eval_episodes, seed + 999)
    eval_s = time.perf_counter() - start
    timed_steps = done - (timed_from or 0)  # all of them when the warm-up is the whole run
    return phases.result(
        "floor", "ppo_cart_pole", seed, done, timed_steps, totals, eval_s, cpu,
        num_threads=num_threads, final_train_return=returns.average(),
        final_eval_return=final_eval, curve=curve,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env_steps", type=int, default=PPO["env_steps"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num_threads", type=int, default=1)
    parser.add_argument("--warmup_steps", type=int, default=WARMUP_STEPS)
    parser.add_argument("--eval_episodes", type=int, default=10)
    parser.add_argument(
        "--matmul_precision", default="highest", help="torch's, for matrix products"
    )
    parser.add_argument("--log_every", type=int, default=0, help="print every N curve points")
    args = parser.parse_args()
    record = run(**vars(args))
    print(phases.line(record))
    print(f"final training return {record['final_train_return']}, greedy eval return "
          f"{record['final_eval_return']} ({args.eval_episodes} episodes)")  # fmt: skip


if __name__ == "__main__":
    main()
