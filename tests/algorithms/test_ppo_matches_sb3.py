"""alf's PPO update equals Stable-Baselines3's, given the same weights and the same data.

SB3's PPO with the HalfCheetah-v5 benchmark's settings (``benchmarks/tasks.py``), but
one epoch of one minibatch holding the whole rollout and no gradient clipping, collects 512
steps and makes one update. alf's ``PPOAlgorithm`` from
``benchmarks/confs/ppo_halfcheetah_bench_conf.py`` gets SB3's weights and the same data (SB3's
advantages and returns). Every parameter's gradient, and alf's GAE on SB3's rewards and values,
must agree with SB3's to float rounding (relative 1e-4).
"""

import dataclasses
import importlib.util
import itertools

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("stable_baselines3", "mujoco")),
    reason="needs stable-baselines3 and mujoco (pip install -e '.[benchmarks,mujoco]')",
)

STEPS = 512  # no episode end: HalfCheetah's episodes last 1,000 steps
ROUNDING = 1e-4

# SB3 policy parameter -> alf parameter (alf's FC layers store weights as [out, in] too).
_ACTOR, _CRITIC = "_actor_network._encoding_net._fc_layers", "_value_network._fc_layers"
_HEADS = {0: ("action_net", "_actor_network._projection_net._means_projection_layer")}
_HEADS[1] = ("value_net", f"{_CRITIC}.2")
PARAMETER_MAP = {"log_std": "_actor_network._projection_net._std"}
for i, w in itertools.product((0, 1), ("weight", "bias")):
    PARAMETER_MAP[f"mlp_extractor.policy_net.{2 * i}.{w}"] = f"{_ACTOR}.{i}._{w}"
    PARAMETER_MAP[f"mlp_extractor.value_net.{2 * i}.{w}"] = f"{_CRITIC}.{i}._{w}"
    PARAMETER_MAP[f"{_HEADS[i][0]}.{w}"] = f"{_HEADS[i][1]}." + ("_" * i) + w
BUFFER = "observations actions rewards episode_starts log_probs values advantages returns"


def sb3_update(seed: int) -> dict:
    """One SB3 PPO update on a fresh rollout: the weights before it, the buffer, the gradients."""
    from benchmarks.harness import sb3
    from benchmarks.tasks import TASKS

    TASK = TASKS["ppo_halfcheetah"]

    one_update = dict(n_steps=STEPS, batch_size=STEPS, n_epochs=1, max_grad_norm=1e9)
    model = sb3.model(dataclasses.asdict(TASK), seed, **one_update)
    captured, original_train = {}, model.train

    def train():
        captured["weights"] = {n: p.detach().clone() for n, p in model.policy.named_parameters()}
        buf = model.rollout_buffer
        captured["buffer"] = {
            name: torch.as_tensor(np.asarray(getattr(buf, name)).reshape(STEPS, -1)).float()
            for name in BUFFER.split()
        }
        original_train()

    model.train = train
    model.learn(STEPS)  # one backward pass: its gradients stay in ``.grad``
    captured["grads"] = {n: p.grad.detach().clone() for n, p in model.policy.named_parameters()}
    return captured


def alf_gradients(captured: dict, root_dir: str) -> dict:
    """alf's gradients for the same weights and data."""
    from alf.algorithms.actor_critic_algorithm import ActorCriticRolloutInfo
    from alf.data_structures import Experience, StepType, TimeStep
    from benchmarks.harness import steady
    from benchmarks.tasks import TASKS

    TASK = TASKS["ppo_halfcheetah"]

    params = [f"TrainerConfig.mini_batch_size={STEPS}"]
    params.append("TrainerConfig.num_updates_per_train_iter=1")
    alg = steady.alf_algorithm(TASK.conf, 0, root_dir, params)
    state = alg.state_dict()
    for sb3_name, alf_name in PARAMETER_MAP.items():
        state[alf_name] = captured["weights"][sb3_name].reshape(state[alf_name].shape)
    alg.load_state_dict(state)
    for spec, _, _ in alg.optimizers():
        spec.gradient_clipping = None  # as SB3's max_grad_norm=1e9 above: no clipping
    buf = {k: v.unsqueeze(0) for k, v in captured["buffer"].items()}  # [1, N]: N steps

    def column(name):
        return buf[name].squeeze(-1)

    experience = Experience(
        time_step=TimeStep(
            step_type=torch.full((1, STEPS), int(StepType.MID), dtype=torch.int32),
            reward=torch.zeros(1, STEPS),
            discount=torch.ones(1, STEPS),
            observation=buf["observations"],
        ),
        action=buf["actions"],
        rollout_info=ActorCriticRolloutInfo(
            action=buf["actions"],
            log_prob=column("log_probs"),
            value=column("values"),
            advantages=column("advantages"),
            returns=column("returns"),
        ),
    )
    alg.update_from_experience(experience)
    return {n: p.grad.detach().clone() for n, p in alg.named_parameters()}


def gae_difference(captured: dict, gamma: float = 0.98, gae_lambda: float = 0.92) -> float:
    """Largest relative difference between SB3's advantages and alf's GAE on SB3's rewards and
    values (alf rows: row ``t + 1`` holds the reward of action ``t``). SB3 does not store the
    bootstrap value ``V(s_N)``: it is solved from the last advantage, which then checks every
    earlier one."""
    from alf.data_structures import StepType
    from alf.utils import value_ops

    buf = captured["buffer"]
    assert not bool(buf["episode_starts"][1:].any()), "the rollout holds an episode end"
    rewards, values = buf["rewards"].squeeze(-1), buf["values"].squeeze(-1)
    advantages = buf["advantages"].squeeze(-1)
    last_value = (advantages[-1] - rewards[-1] + values[-1]) / gamma
    alf_advantages = value_ops.generalized_advantage_estimation(
        torch.cat([torch.zeros(1), rewards]).unsqueeze(1),
        torch.cat([values, last_value.reshape(1)]).unsqueeze(1),
        torch.full((STEPS + 1, 1), int(StepType.MID)),
        torch.full((STEPS + 1, 1), gamma),
        td_lambda=gae_lambda,
    ).squeeze(1)
    return float((alf_advantages - advantages).abs().max() / advantages.abs().max())


@pytest.fixture(autouse=True)
def _clean_configs():
    """The conf's values must not leak into other tests (nor one seed's into the next)."""
    import alf

    alf.reset_configs()
    yield
    alf.reset_configs()


@pytest.mark.parametrize("seed", [0, 1])
def test_ppo_gradients_and_gae_equal_sb3s_on_the_same_weights_and_data(seed, tmp_path):
    captured = sb3_update(seed)
    grads = alf_gradients(captured, str(tmp_path))
    differences = {}
    for sb3_name, alf_name in PARAMETER_MAP.items():
        g_sb3 = captured["grads"][sb3_name].reshape(-1)
        g_alf = grads[alf_name].reshape(-1)
        assert float(g_sb3.abs().max()) > 0, f"{sb3_name}: SB3's gradient is zero"
        differences[sb3_name] = float((g_sb3 - g_alf).abs().max() / g_sb3.abs().max())
    differences["GAE"] = gae_difference(captured)
    worst = max(differences, key=differences.get)
    assert differences[worst] < ROUNDING, f"{worst} differs: {differences}"
