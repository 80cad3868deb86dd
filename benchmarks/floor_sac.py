"""SAC on Pendulum-v1 by hand, no framework: the floor alf's SAC is timed against.

``alf/examples/sac_pendulum_conf.py``'s algorithm and hyperparameters: one env; 100 steps of the
untrained policy, then per env step one update on 256 transitions drawn from the replay buffer
(100,000); a time-limit end bootstraps. Actor 3-256-256 (ReLU), mean and log-std heads (std
``exp(clamp(., -20, 2))``), action ``2 tanh(u)`` reparameterized, log π with the tanh and ×2
Jacobians; twin critics 4-256-256-1 with Polyak targets (tau 0.005). One update: target
``r + 0.99 d (min Q'(s', a') - α log π(a'|s'))``, critic loss ``Σ_i (Q_i - y)^2``, actor loss
``α log π - min Q`` (critics held fixed), temperature loss ``-log α (log π - 1)``, summed and
back-propagated once; three fused Adams (lr 1e-3). Init as alf's (truncated normals of std
√2/√fan_in, heads 0.3/√256, critic outputs uniform ±0.03, biases 0); subnormals flushed. Timed
per env step: rollout, update (storing, sampling, the update) and bookkeeping, after the first
``warmup_steps`` env steps.
"""

from __future__ import annotations

import collections
import copy
import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.floor_ppo import TRUNCATED_NORMAL_STD
from benchmarks.harness import phases

#: alf/examples/sac_pendulum_conf.py (tests/benchmarks/test_floor.py checks them against it)
SAC = dict(env_name="Pendulum-v1", hidden=(256, 256), lr=1e-3, batch_size=256, gamma=0.99)
SAC.update(tau=0.005, learning_starts=100, buffer_size=100_000, initial_log_alpha=0.0)
SAC.update(log_std_bounds=(-20.0, 2.0), env_steps=20_000)
ENV_STEPS = SAC["env_steps"]
WARMUP_STEPS = 300  # the first 200 updates are not timed
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def linear(n_in: int, n_out: int, gain: float | None) -> nn.Linear:
    """A layer: weight a truncated normal of std ``gain / sqrt(n_in)`` (None: uniform ±0.03)."""
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
        log_tanh_jacobian = 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))  # log(1 - tanh²)
        log_prob = -0.5 * eps * eps - std.log() - HALF_LOG_2PI - log_tanh_jacobian
        log_prob = log_prob - math.log(self.scale)
        return self.scale * torch.tanh(u), log_prob.sum(-1)


def critic(input_size: int, hidden) -> nn.Sequential:
    return nn.Sequential(*trunk((input_size, *hidden)), linear(hidden[-1], 1, None))


class Replay:
    """Transitions ``(s, a, r, 1 - terminated, s')`` in preallocated tensors."""

    def __init__(self, capacity: int, obs_size: int, action_size: int):
        self.obs, self.next_obs = torch.zeros(capacity, obs_size), torch.zeros(capacity, obs_size)
        self.action = torch.zeros(capacity, action_size)
        self.reward, self.not_done = torch.zeros(capacity), torch.zeros(capacity)
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
        groups = (self.actor.parameters(), self.critic_params, [self.log_alpha])
        self.optimizers = [torch.optim.Adam(params, lr=lr, fused=True) for params in groups]
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
        self.critics.requires_grad_(False)
        actor_q, _ = self.q(self.critics, obs, new_action)
        self.critics.requires_grad_(True)
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


def run(seed=0, env_steps=ENV_STEPS, num_threads=1, warmup_steps=WARMUP_STEPS,
        matmul_precision="highest") -> dict:  # fmt: skip
    """Train (see the module doc); the run's ``phases.result`` record."""
    import gymnasium as gym

    cfg = SAC
    phases.setup_torch(seed, num_threads, matmul_precision)
    torch.set_flush_denormal(True)
    env = gym.make(cfg["env_name"])
    obs_size, action_size = env.observation_space.shape[0], env.action_space.shape[0]
    scale = float(env.action_space.high[0])  # Pendulum: symmetric bounds ±2
    sac = Sac(obs_size, action_size, scale, cfg)
    replay = Replay(cfg["buffer_size"], obs_size, action_size)
    obs = torch.from_numpy(env.reset(seed=seed)[0])
    totals, finished = dict.fromkeys(phases.PHASES, 0.0), collections.deque(maxlen=10)
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
        t3 = time.perf_counter()
        obs = torch.from_numpy(env.reset()[0]) if end else next_obs
        t4 = time.perf_counter()
        for phase, seconds in zip(phases.PHASES, (t1 - t0 + t4 - t3, t2 - t1, t3 - t2)):
            totals[phase] += seconds
    cpu = time.process_time() - cpu
    env.close()
    timed_steps = env_steps - (timed_from or 0)  # all of them when the warm-up is the whole run
    final = float(np.mean(finished)) if finished else None
    return phases.result(
        "floor", "sac_pendulum", seed, env_steps, timed_steps, totals, cpu,
        num_threads=num_threads, final_train_return=final,
    )  # fmt: skip
