"""Does alf's PPO update equal Stable-Baselines3's, given the same weights and the same data?

    python -m benchmarks.check_ppo_update_vs_sb3 [--seed 0] [--steps 512]

SB3's PPO (``ppo_halfcheetah``'s settings, but one epoch of one minibatch holding the whole
rollout and no gradient clipping) collects a rollout and makes one update; alf's
``PPOAlgorithm`` (``benchmarks/confs/ppo_halfcheetah_bench_conf.py``) gets the same weights and
data (SB3's advantages and returns). Printed: each parameter's gradients and their largest
relative difference, the loss, and alf's GAE against SB3's advantages. Float rounding stays
below a relative 1e-4.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import tempfile

import numpy as np
import torch

from benchmarks.harness import sb3, steady
from benchmarks.ppo_halfcheetah import TASK

# SB3 policy parameter -> alf parameter (alf's Linear layers store weights as [out, in] too).
_ACTOR, _CRITIC = "_actor_network._encoding_net._fc_layers", "_value_network._fc_layers"
_HEADS = {0: ("action_net", "_actor_network._projection_net._means_projection_layer")}
_HEADS[1] = ("value_net", f"{_CRITIC}.2")
PARAMETER_MAP = {"log_std": "_actor_network._projection_net._std"}
for i, w in itertools.product((0, 1), ("weight", "bias")):
    PARAMETER_MAP[f"mlp_extractor.policy_net.{2 * i}.{w}"] = f"{_ACTOR}.{i}.{w}"
    PARAMETER_MAP[f"mlp_extractor.value_net.{2 * i}.{w}"] = f"{_CRITIC}.{i}.{w}"
    PARAMETER_MAP[f"{_HEADS[i][0]}.{w}"] = f"{_HEADS[i][1]}.{w}"
BUFFER = "observations actions rewards episode_starts log_probs values advantages returns"


def sb3_update(seed: int, steps: int) -> dict:
    """One SB3 PPO update on a fresh rollout: weights before, buffer, gradients."""
    one_update = dict(n_steps=steps, batch_size=steps, n_epochs=1, max_grad_norm=1e9)
    model = sb3.model(dataclasses.asdict(TASK), seed, **one_update)
    captured, original_train = {}, model.train

    def train():
        captured["weights"] = {n: p.detach().clone() for n, p in model.policy.named_parameters()}
        buf = model.rollout_buffer
        captured["buffer"] = {
            name: torch.as_tensor(np.asarray(getattr(buf, name)).reshape(steps, -1)).float()
            for name in BUFFER.split()
        }
        original_train()

    model.train = train
    model.learn(steps)  # one backward pass: its gradients stay in ``.grad``
    captured["grads"] = {n: p.grad.detach().clone() for n, p in model.policy.named_parameters()}
    return captured


def alf_update(captured: dict) -> tuple[dict, object]:
    """alf's gradients for the same weights and data."""
    from alf.algorithms.actor_critic_algorithm import ActorCriticRolloutInfo
    from alf.data_structures import Experience, StepType, TimeStep

    steps = captured["buffer"]["observations"].shape[0]
    params = [
        f"TrainerConfig.mini_batch_size={steps}",
        "TrainerConfig.num_updates_per_train_iter=1",
    ]
    alg = steady.alf_algorithm(TASK.conf, 0, tempfile.mkdtemp(prefix="check_ppo_"), params)
    state = alg.state_dict()
    for sb3_name, alf_name in PARAMETER_MAP.items():
        state[alf_name] = captured["weights"][sb3_name].reshape(state[alf_name].shape)
    alg.load_state_dict(state)
    for spec, _, _ in alg.optimizers():
        spec.gradient_clipping = None  # as SB3's max_grad_norm=1e9 above: no clipping
    buf = captured["buffer"]

    def row(x):  # [N, ...] -> [1, N, ...]: N independent steps
        return x.unsqueeze(0)

    experience = Experience(
        time_step=TimeStep(
            step_type=row(torch.full((steps,), int(StepType.MID), dtype=torch.int32)),
            reward=row(torch.zeros(steps)),
            discount=row(torch.ones(steps)),
            observation=row(buf["observations"]),
        ),
        action=row(buf["actions"]),
        rollout_info=ActorCriticRolloutInfo(
            action=row(buf["actions"]),
            log_prob=row(buf["log_probs"].squeeze(-1)),
            value=row(buf["values"].squeeze(-1)),
            advantages=row(buf["advantages"].squeeze(-1)),
            returns=row(buf["returns"].squeeze(-1)),
        ),
    )
    loss_info = alg.update_from_experience(experience)
    grads = {n: p.grad.detach().clone() for n, p in alg.named_parameters()}
    return grads, loss_info


def check_gae(captured: dict, gamma: float = 0.98, gae_lambda: float = 0.92) -> float:
    """Largest relative difference between SB3's advantages and alf's GAE on SB3's
    rewards and values (alf rows: row ``t + 1`` holds the reward of action ``t``).

    The rollout must hold no episode end (512 steps of a 1000-step HalfCheetah
    episode); SB3's bootstrap value ``V(s_N)`` is not stored, so it is solved from the
    last advantage, which then checks every earlier one.
    """
    from alf.data_structures import StepType
    from alf.utils import value_ops

    buf = captured["buffer"]
    assert not bool(buf["episode_starts"][1:].any()), "the rollout holds an episode end"
    rewards, values = buf["rewards"].squeeze(-1), buf["values"].squeeze(-1)
    advantages = buf["advantages"].squeeze(-1)
    last_value = (advantages[-1] - rewards[-1] + values[-1]) / gamma
    num = rewards.shape[0]
    alf_advantages = value_ops.generalized_advantage_estimation(
        torch.cat([torch.zeros(1), rewards]).unsqueeze(1),
        torch.cat([values, last_value.reshape(1)]).unsqueeze(1),
        torch.full((num + 1, 1), int(StepType.MID)),
        torch.full((num + 1, 1), gamma),
        td_lambda=gae_lambda,
    ).squeeze(1)
    return float((alf_advantages - advantages).abs().max() / advantages.abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=512)
    args = parser.parse_args()
    torch.set_num_threads(1)
    captured = sb3_update(args.seed, args.steps)
    grads, loss_info = alf_update(captured)
    worst = 0.0
    header = ["|grad| SB3", "|grad| alf", "max rel diff"]
    print(f"{'parameter (SB3 name)':40s} " + " ".join(f"{h:>13s}" for h in header))
    for sb3_name, alf_name in PARAMETER_MAP.items():
        g_sb3 = captured["grads"][sb3_name].reshape(-1)
        g_alf = grads[alf_name].reshape(-1)
        rel = float((g_sb3 - g_alf).abs().max() / g_sb3.abs().max().clamp(min=1e-12))
        worst = max(worst, rel)
        print(f"{sb3_name:40s} {float(g_sb3.norm()):12.6g} {float(g_alf.norm()):12.6g} {rel:13.3g}")
    print(f"alf loss: {float(loss_info.loss):.6g}")
    gae = check_gae(captured)
    print(f"GAE on SB3's rewards and values: largest relative difference {gae:.3g}")
    worst = max(worst, gae)
    print(f"largest relative difference: {worst:.3g} (float rounding: below 1e-4)")


if __name__ == "__main__":
    main()
