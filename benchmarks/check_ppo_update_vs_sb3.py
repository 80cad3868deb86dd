"""Does alf's PPO update equal Stable-Baselines3's, given the same weights and the same data?

    python -m benchmarks.check_ppo_update_vs_sb3 [--seed 0] [--steps 512]

SB3's PPO (the HalfCheetah-v5 settings of ``ppo_halfcheetah``, but one epoch of one
minibatch holding the whole rollout, and no gradient clipping) collects a real rollout
and makes one update; its weights, rollout buffer (observations, actions, old
log-probabilities and values, advantages, returns) and gradients are captured. alf's
``PPOAlgorithm`` from ``benchmarks/confs/ppo_halfcheetah_bench_conf.py`` gets the same
weights and computes its update on the same data (SB3's advantages and returns are
handed in, so this checks the loss and its gradient; GAE is tested on its own in
``tests/utils/test_value_ops.py``). Printed: each parameter's gradient from both and their
largest relative difference, and the loss terms. A difference beyond float rounding
(relative 1e-4) would mean the two frameworks do not run the same algorithm.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from benchmarks.ppo_halfcheetah import SB3_PPO, TASK

CONF = TASK.conf  # relative to the repository root, where this runs

# SB3 policy parameter -> alf parameter (alf's Linear layers store weights as [out, in] too).
_ACTOR, _CRITIC = "_actor_network._encoding_net._fc_layers", "_value_network._fc_layers"
_MEANS = "_actor_network._projection_net._means_projection_layer"
PARAMETER_MAP = {"log_std": "_actor_network._projection_net._std"}
for i, w in ((i, w) for i in (0, 1) for w in ("weight", "bias")):
    PARAMETER_MAP[f"mlp_extractor.policy_net.{2 * i}.{w}"] = f"{_ACTOR}.{i}.{w}"
    PARAMETER_MAP[f"mlp_extractor.value_net.{2 * i}.{w}"] = f"{_CRITIC}.{i}.{w}"
    PARAMETER_MAP[f"{('action_net', 'value_net')[i]}.{w}"] = (f"{_MEANS}.{w}", f"{_CRITIC}.2.{w}")[
        i
    ]
BUFFER = "observations actions rewards episode_starts log_probs values advantages returns"


def sb3_update(seed: int, steps: int) -> dict:
    """One SB3 PPO update on a fresh rollout: weights before, buffer, gradients."""
    import gymnasium as gym
    from stable_baselines3 import PPO

    kwargs = dict(SB3_PPO)
    kwargs.update(n_steps=steps, batch_size=steps, n_epochs=1, max_grad_norm=1e9)
    kwargs.pop("policy", None)
    policy_kwargs = dict(kwargs.pop("policy_kwargs"))
    policy_kwargs["activation_fn"] = getattr(torch.nn, policy_kwargs["activation_fn"])
    env = gym.make("HalfCheetah-v5")
    model = PPO("MlpPolicy", env, seed=seed, device="cpu", policy_kwargs=policy_kwargs, **kwargs)
    captured = {}
    optimizer = model.policy.optimizer
    original_step = optimizer.step

    def step(*args, **kw):
        captured["grads"] = {n: p.grad.detach().clone() for n, p in model.policy.named_parameters()}
        return original_step(*args, **kw)

    optimizer.step = step
    original_train = model.train

    def train():
        captured["weights"] = {n: p.detach().clone() for n, p in model.policy.named_parameters()}
        buf = model.rollout_buffer
        captured["buffer"] = {
            name: torch.as_tensor(np.asarray(getattr(buf, name)).reshape(steps, -1)).float()
            for name in BUFFER.split()
        }
        original_train()

    model.train = train
    model.learn(steps)
    return captured


def alf_update(captured: dict) -> tuple[dict, object]:
    """alf's gradients for the same weights and data."""
    import alf  # noqa: F401
    from alf.algorithms.actor_critic_algorithm import ActorCriticRolloutInfo
    from alf.algorithms.config import TrainerConfig
    from alf.data_structures import Experience, StepType, TimeStep
    from alf.environments.utils import create_environment
    from alf.trainers.policy_trainer import create_algorithm
    from alf.utils.common import parse_conf_file

    steps = captured["buffer"]["observations"].shape[0]
    params = ["TrainerConfig.root_dir='/tmp/check_ppo_update'"]
    params += [
        f"TrainerConfig.mini_batch_size={steps}",
        "TrainerConfig.num_updates_per_train_iter=1",
    ]
    parse_conf_file(CONF, params, [])
    env = create_environment()
    try:
        alg = create_algorithm(TrainerConfig(), env)
    finally:
        env.close()
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
