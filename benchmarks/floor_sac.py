"""SAC on Pendulum-v1 written by hand, no framework: the floor alf's SAC is timed against.

    python -m benchmarks.floor_sac [--env_steps 20000] [--seed 0] [--num_threads 1]

The algorithm and every hyperparameter are those of ``alf/examples/sac_pendulum_conf.py`` (on
``sac_sb3_conf.py``), as ``benchmarks/sac_pendulum.py`` runs it (100 steps before the first
update), so both compute the same thing:

- one Pendulum-v1 env (gymnasium, seeded ``seed``); the first 100 steps are collected with the
  untrained policy, then every env step is followed by one gradient step on 256 transitions
  drawn uniformly from the replay buffer (100,000 transitions);
- a time-limit end bootstraps (Pendulum never terminates; a termination would not);
- actor: MLP 3-256-256 with ReLU, a mean and a log-std layer, std ``exp(clamp(., -20, 2))``,
  action ``2 tanh(u)``, ``u ~ N(mean, std)`` (reparameterized); log π includes the tanh and the
  ×2 Jacobians, as alf's squashed distribution does; the greedy action is ``2 tanh(mean)``;
- twin critics MLP (obs, action) 4-256-256-1 with ReLU, and their Polyak-averaged targets
  (tau 0.005 after every update);
- one update: target ``r + 0.99 d (min_i Q'_i(s', a') - α log π(a'|s'))`` with ``a' ~ π(s')``;
  critic loss ``Σ_i (Q_i(s, a) - y)^2``; actor loss ``α log π(ã|s) - min_i Q_i(s, ã)`` with
  the critics' parameters held fixed; temperature loss ``-log α (log π(ã|s) - 1)`` (target
  entropy -dim(A) = -1, log α from 0); α is that of the update's start; the three losses are
  averaged over the batch, summed and back-propagated once; three Adams (lr 1e-3, torch's
  fused kernel, as alf's) step the actor, the critics and log α;
- initialization as alf's: hidden weights a truncated normal of std √2/√fan_in, the mean and
  log-std layers of std 0.3/√256, the critics' output layer uniform in ±0.03, biases 0;
  subnormal floats flushed to zero (alf's default).

Timed per env step with ``time.perf_counter``: rollout (policy forward, env step, reset at an
episode's end, conversions), update (storing the transition, sampling, forward, backward, the
three Adam steps, the target update) and bookkeeping (episode returns). The first
``--warmup_steps`` env steps are not timed; the final evaluation is timed apart and left out.
"""

from __future__ import annotations

import argparse
import collections
import copy
import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.harness import phases

#: alf/examples/sac_pendulum_conf.py (tests/benchmarks/test_floor.py checks them against it)
SAC = dict(
    env_name="Pendulum-v1",
    hidden=(256, 256),
    lr=1e-3,
    batch_size=256,
    gamma=0.99,
    tau=0.005,
    learning_starts=100,
    buffer_size=100_000,
    initial_log_alpha=0.0,
    log_std_bounds=(-20.0, 2.0),
    env_steps=20_000,
)
WARMUP_STEPS = 300  # the first 200 updates are not timed
TRUNCATED_NORMAL_STD = 0.87962566103423978  # std of a unit normal cut at ±2
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def linear(n_in: int, n_out: int, gain: float | None) -> nn.Linear:
    """A layer with a truncated normal weight of std ``gain / sqrt(n_in)`` (None: uniform in
    ±0.03) and a zero bias."""
    layer = nn.Linear(n_in, n_out)
    nn.init.zeros_(layer.bias)
    if gain is None:
        nn.init.uniform_(layer.weight, -0.03, 0.03)
    else:
        std = gain / math.sqrt(n_in) / TRUNCATED_NORMAL_STD
        nn.init.trunc_normal_(layer.weight, 0.0, std, -2 * std, 2 * std)
    return layer


def trunk(sizes) -> nn.Sequential:
    """ReLU hidden layers (He-scaled)."""
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers += [linear(n_in, n_out, math.sqrt(2)), nn.ReLU()]
    return nn.Sequential(*layers)


class Actor(nn.Module):
    def __init__(self, obs_size: int, action_size: int, hidden, log_std_bounds, scale: float):
        super().__init__()
        self.trunk = trunk((obs_size, *hidden))
        self.mean = linear(hidden[-1], action_size, 0.3)
        self.log_std = linear(hidden[-1], action_size, 0.3)
        self.bounds, self.scale = log_std_bounds, scale

    def forward(self, obs):
        h = self.trunk(obs)
        return self.mean(h), self.log_std(h).clamp(*self.bounds).exp()

    def act(self, obs):
        """An action sampled for the env ``[N, A]``."""
        mean, std = self(obs)
        return self.scale * torch.tanh(torch.addcmul(mean, std, torch.randn_like(mean)))

    def sample(self, obs):
        """A reparameterized action ``[N, A]`` and its log-probability ``[N]``."""
        mean, std = self(obs)
        eps = torch.randn_like(mean)
        u = mean + std * eps
        log_prob = (
            -0.5 * eps * eps
            - std.log()
            - HALF_LOG_2PI
            - 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))  # log(1 - tanh(u)^2)
            - math.log(self.scale)
        )
        return self.scale * torch.tanh(u), log_prob.sum(-1)


def critic(input_size: int, hidden) -> nn.Sequential:
    return nn.Sequential(*trunk((input_size, *hidden)), linear(hidden[-1], 1, None))


class Replay:
    """Transitions ``(s, a, r, 1 - terminated, s')`` in preallocated tensors."""

    def __init__(self, capacity: int, obs_size: int, action_size: int):
        self.obs = torch.zeros(capacity, obs_size)
        self.next_obs = torch.zeros(capacity, obs_size)
        self.action = torch.zeros(capacity, action_size)
        self.reward = torch.zeros(capacity)
        self.not_done = torch.zeros(capacity)
        self.capacity, self.size, self.pos = capacity, 0, 0

    def add(self, obs, action, reward, terminated, next_obs) -> None:
        i = self.pos
        self.obs[i], self.action[i], self.next_obs[i] = obs, action, next_obs
        self.reward[i], self.not_done[i] = float(reward), 0.0 if terminated else 1.0
        self.pos, self.size = (i + 1) % self.capacity, min(self.size + 1, self.capacity)

    def sample(self, batch_size: int):
        i = torch.randint(self.size, (batch_size,))
        return self.obs[i], self.action[i], self.reward[i], self.not_done[i], self.next_obs[i]


class Sac:
    """The networks, optimizers and one update (module doc)."""

    def __init__(self, obs_size: int, action_size: int, scale: float, cfg: dict):
        hidden, lr = cfg["hidden"], cfg["lr"]
        self.actor = Actor(obs_size, action_size, hidden, cfg["log_std_bounds"], scale)
        self.critics = nn.ModuleList(critic(obs_size + action_size, hidden) for _ in range(2))
        self.targets = copy.deepcopy(self.critics).requires_grad_(False)
        self.log_alpha = nn.Parameter(torch.tensor(cfg["initial_log_alpha"]))
        self.critic_params = list(self.critics.parameters())
        self.target_params = list(self.targets.parameters())
        self.optimizers = [
            torch.optim.Adam(params, lr=lr, fused=True)
            for params in (self.actor.parameters(), self.critic_params, [self.log_alpha])
        ]
        self.target_entropy = -float(action_size)
        self.gamma, self.tau = cfg["gamma"], cfg["tau"]

    def q(self, networks, obs, action) -> torch.Tensor:
        """``min_i Q_i(s, a)`` ``[N]`` and the stacked ``[N, 2]``."""
        x = torch.cat([obs, action], -1)
        both = torch.cat([net(x) for net in networks], -1)
        return both.min(-1).values, both

    def update(self, batch) -> None:
        obs, action, reward, not_done, next_obs = batch
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            next_action, next_log_prob = self.actor.sample(next_obs)
            next_q, _ = self.q(self.targets, next_obs, next_action)
            target = reward + self.gamma * not_done * (next_q - alpha * next_log_prob)
        new_action, log_prob = self.actor.sample(obs)
        _, q = self.q(self.critics, obs, action)
        for p in self.critic_params:
            p.requires_grad_(False)
        actor_q, _ = self.q(self.critics, obs, new_action)
        for p in self.critic_params:
            p.requires_grad_(True)
        critic_loss = ((q - target.unsqueeze(-1)) ** 2).sum(-1)
        actor_loss = alpha * log_prob - actor_q
        alpha_loss = -self.log_alpha * (log_prob.detach() + self.target_entropy)
        loss = (critic_loss + actor_loss + alpha_loss).mean()
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=True)
        loss.backward()
        for optimizer in self.optimizers:
            optimizer.step()
        with torch.no_grad():
            torch._foreach_lerp_(self.target_params, self.critic_params, self.tau)


@torch.inference_mode()
def evaluate(actor: Actor, env_name: str, episodes: int, seed: int) -> float | None:
    """Mean return of ``episodes`` episodes of the greedy policy ``scale * tanh(mean)``."""
    import gymnasium as gym

    if episodes <= 0:
        return None
    env, returns = gym.make(env_name), []
    for i in range(episodes):
        obs, _ = env.reset(seed=seed + i)
        total, done = 0.0, False
        while not done:
            mean, _ = actor(torch.from_numpy(obs).unsqueeze(0))
            action = (actor.scale * torch.tanh(mean))[0].numpy()
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def run(
    seed: int = 0,
    env_steps: int = SAC["env_steps"],
    num_threads: int = 1,
    warmup_steps: int = WARMUP_STEPS,
    eval_episodes: int = 10,
    log_every: int = 0,
    matmul_precision: str = "highest",
) -> dict:
    """Train (see the module doc); the run's ``phases.result`` record, with the training
    return curve ``[env steps, mean return of the last 10 episodes]`` every 2,000 env steps."""
    import gymnasium as gym

    cfg = SAC
    torch.set_num_threads(num_threads)
    torch.set_float32_matmul_precision(matmul_precision)
    torch.set_flush_denormal(True)
    torch.manual_seed(seed)
    env = gym.make(cfg["env_name"])
    obs_size, action_size = env.observation_space.shape[0], env.action_space.shape[0]
    scale = float(env.action_space.high[0])  # Pendulum: symmetric bounds ±2
    sac = Sac(obs_size, action_size, scale, cfg)
    replay = Replay(cfg["buffer_size"], obs_size, action_size)
    obs = torch.from_numpy(env.reset(seed=seed)[0])
    totals, curve, finished = dict.fromkeys(phases.PHASES, 0.0), [], collections.deque(maxlen=10)
    running, timed_from, cpu = 0.0, None, time.process_time()
    for step in range(env_steps):
        if timed_from is None and step >= warmup_steps:
            timed_from, totals, cpu = step, dict.fromkeys(phases.PHASES, 0.0), time.process_time()
        t0 = time.perf_counter()
        with torch.inference_mode():
            action = sac.actor.act(obs.unsqueeze(0))
        next_obs, reward, terminated, truncated, _ = env.step(action[0].numpy())
        next_obs = torch.from_numpy(next_obs)
        end = terminated or truncated
        t1 = time.perf_counter()
        replay.add(obs, action[0], reward, terminated, next_obs)
        if replay.size >= cfg["learning_starts"]:
            sac.update(replay.sample(cfg["batch_size"]))
        t2 = time.perf_counter()
        running += float(reward)
        if end:
            finished.append(running)
            running = 0.0
        if (step + 1) % 2000 == 0 or step + 1 == env_steps:
            average = float(np.mean(finished)) if finished else None
            curve.append([step + 1, average])
            if log_every and len(curve) % log_every == 0:
                print(f"{step + 1} env steps: training return {average}", flush=True)
        t3 = time.perf_counter()
        obs = torch.from_numpy(env.reset()[0]) if end else next_obs
        t4 = time.perf_counter()
        for phase, seconds in zip(phases.PHASES, (t1 - t0 + t4 - t3, t2 - t1, t3 - t2)):
            totals[phase] += seconds
    cpu = time.process_time() - cpu
    env.close()
    start = time.perf_counter()
    final_eval = evaluate(sac.actor, cfg["env_name"], eval_episodes, seed + 999)
    eval_s = time.perf_counter() - start
    timed_steps = env_steps - (timed_from or 0)  # all of them when the warm-up is the whole run
    return phases.result(
        "floor", "sac_pendulum", seed, env_steps, timed_steps, totals, eval_s, cpu,
        num_threads=num_threads, final_train_return=float(np.mean(finished)) if finished else None,
        final_eval_return=final_eval, curve=curve,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env_steps", type=int, default=SAC["env_steps"])
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
