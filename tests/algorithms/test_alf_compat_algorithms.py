"""ALF's algorithm names in alf: ``Agent``, ``TracAlgorithm``, ``EntropyTargetAlgorithm``."""

import math

import pytest
import torch

from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf.algorithms.actor_critic_loss import ActorCriticLoss
from alf.algorithms.agent import Agent
from alf.algorithms.config import TrainerConfig
from alf.algorithms.entropy_target_algorithm import EntropyTargetAlgorithm
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.sac_algorithm import SacAlgorithm
from alf.algorithms.trac_algorithm import TracAlgorithm, action_dist_bound, trac_class
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec
from alf.utils import seeding
from alf.utils.dist_utils import calc_default_target_entropy
from tests.algorithms.algorithm_test_utils import counting_env, small_networks

DISCRETE = BoundedTensorSpec((), dtype=torch.int64, minimum=0, maximum=3)
CONTINUOUS = BoundedTensorSpec((2,), dtype=torch.float32, minimum=-1.0, maximum=1.0)


# --------------------------------------------------------------------------- Agent


def _agent(env, **kwargs):
    return Agent(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=TrainerConfig(unroll_length=4),
        **kwargs,
    )


def test_agent_builds_the_rl_algorithm_with_its_optimizer():
    env = counting_env(num_envs=2)
    try:
        spec = Adam(lr=0.25)
        alg = _agent(env, rl_algorithm_cls=PPOAlgorithm, optimizer=spec)
        assert type(alg) is PPOAlgorithm
        (built,) = alg.optimizers()
        assert built[0] is spec and built[1].param_groups[0]["lr"] == 0.25
        assert alg.train_iter() == 8
    finally:
        env.close()


def test_agent_refuses_what_alf_has_not():
    env = counting_env(num_envs=2)
    try:
        with pytest.raises(ValueError, match="Agent.rl_algorithm_cls=None: expected an RL alg"):
            _agent(env, rl_algorithm_cls=None)
        assert type(_agent(env, optimizer=Adam(lr=1e-3))) is ActorCriticAlgorithm  # ALF's
        with pytest.raises(ValueError, match="Agent.reward_weight_algorithm_cls is not supp"):
            _agent(env, rl_algorithm_cls=PPOAlgorithm, reward_weight_algorithm_cls=object)
        with pytest.raises(ValueError, match="Agent.intrinsic_reward_module: expected an alg"):
            _agent(env, rl_algorithm_cls=PPOAlgorithm, intrinsic_reward_module=object())
        with pytest.raises(ValueError, match="Agent.extrinsic_reward_coef=2.0 needs an intrin"):
            _agent(env, rl_algorithm_cls=PPOAlgorithm, extrinsic_reward_coef=2.0)
        with pytest.raises(ValueError, match="enforce_entropy_target=True needs an actor-critic"):
            _agent(env, rl_algorithm_cls=SacAlgorithm, enforce_entropy_target=True)
    finally:
        env.close()


def test_agent_entropy_target_adds_the_bonus_to_the_loss():
    env = counting_env(num_envs=2)
    try:
        alg = _agent(
            env,
            rl_algorithm_cls=ActorCriticAlgorithm,
            optimizer=Adam(lr=1e-3),
            enforce_entropy_target=True,
        )
        target = alg._entropy_target
        assert isinstance(target, EntropyTargetAlgorithm)
        assert target.target_entropy == pytest.approx(calc_default_target_entropy(DISCRETE))
        alg.train_iter()
        alg.train_iter()
        assert int(target._count) == 2  # one adjustment per update
        assert "_entropy_target._log_alpha" in alg.state_dict()  # checkpointed
    finally:
        env.close()


# --------------------------------------------------------------------------- entropy target


def test_default_target_entropy_by_hand():
    # discrete, 4 values: 0.9 on one, 0.1/3 on each other one
    expected = -0.9 * math.log(0.9) - 3 * (0.1 / 3) * math.log(0.1 / 3)
    assert calc_default_target_entropy(DISCRETE) == pytest.approx(expected, rel=1e-12)
    # continuous [-1, 1]^2: a uniform density on width 0.2 per dim
    assert calc_default_target_entropy(CONTINUOUS) == pytest.approx(2 * math.log(0.2))


def test_entropy_target_raises_alpha_while_entropy_is_low_and_falling():
    alg = EntropyTargetAlgorithm(
        DISCRETE, initial_alpha=0.1, skip_free_stage=True, target_entropy=1.0, average_window=1
    )
    start = float(alg._log_alpha)
    alg.adjust_alpha(0.9)  # below the target; first value: not falling -> down by rate / 2
    first = float(alg._log_alpha)
    assert first == pytest.approx(start - 0.5 * math.log(2))
    alg.adjust_alpha(0.8)  # below and falling: up by the full rate
    assert float(alg._log_alpha) == pytest.approx(first + math.log(2))
    assert alg.alpha > math.exp(first)


def test_entropy_target_lowers_alpha_while_entropy_is_high_and_rising():
    alg = EntropyTargetAlgorithm(
        DISCRETE, initial_alpha=1.0, skip_free_stage=True, target_entropy=0.5, average_window=1
    )
    alg.adjust_alpha(1.0)
    before = float(alg._log_alpha)
    alg.adjust_alpha(1.2)  # above and rising: down; crossed nothing -> rate stays ln 2
    assert float(alg._log_alpha) == pytest.approx(before - math.log(2))
    # crossing the target shrinks the rate by 0.9
    alg.adjust_alpha(0.4)
    assert float(alg._update_rate) == pytest.approx(0.9 * math.log(2))


def test_entropy_target_free_stage_then_adjust_and_min_alpha():
    alg = EntropyTargetAlgorithm(
        DISCRETE, initial_alpha=0.1, max_entropy=2.0, target_entropy=1.0, min_alpha=0.05
    )
    assert alg.stage == 1
    alg.adjust_alpha(1.5)
    assert alg.stage == 1 and alg.alpha == pytest.approx(0.1)  # free: unchanged
    alg.adjust_alpha(0.1)  # the average (0.8) falls below the target
    assert alg.stage == 2
    for value in (3.0, 4.0, 5.0, 6.0):  # above and rising: alpha falls to its floor
        alg.adjust_alpha(value)
    assert alg.alpha == pytest.approx(0.05)


def test_entropy_target_loss_uses_alpha_before_the_adjustment():
    alg = EntropyTargetAlgorithm(DISCRETE, initial_alpha=0.5, skip_free_stage=True)
    entropy = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    mask = torch.tensor([[True, True], [True, False]])
    loss = alg.loss(entropy, mask)
    assert torch.allclose(loss, -0.5 * entropy.detach())
    assert float(alg._recent[0]) == pytest.approx(2.0)  # mean of the 3 valid entries


# --------------------------------------------------------------------------- TracAlgorithm


def test_action_dist_bounds():
    assert action_dist_bound(DISCRETE, 0.01) == pytest.approx(math.sqrt(0.01 * 4))
    assert action_dist_bound(CONTINUOUS, 0.01) == pytest.approx(math.sqrt(0.01 * 2))


def test_trust_region_step_scales_a_constructed_step():
    """change = 4 * |w - w_old| / 1, bound 0.2: ratio 20 -> w = w_old + 0.9/20 (w - w_old)
    (change 0.18 <= 0.2: one scaling)."""
    trac = trac_class(ActorCriticAlgorithm).__new__(trac_class(ActorCriticAlgorithm))
    torch.nn.Module.__init__(trac)
    trac._name = "trac"
    trac._trac_bounds = [0.2]
    old = torch.tensor([1.0, 2.0])
    param = torch.tensor([1.0, 3.0])  # |w - w_old| = 1
    steps = trac.trust_region_step([param], [old], lambda: [4.0 * float((param - old).norm())])
    assert steps == 1
    assert torch.allclose(param, torch.tensor([1.0, 2.0 + 0.9 / 20]))
    assert trac.trac_unadjusted_change == [4.0]


def _build(cls, env, lr=0.01, **kwargs):
    return cls(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=TrainerConfig(unroll_length=8),
        optimizer=Adam(lr=lr),
        loss=ActorCriticLoss(gamma=0.9),
        **small_networks(),
        **kwargs,
    )


def test_trac_scales_the_actor_step_of_a_real_update():
    """The same update with and without the trust region: with it, the actor moves along
    the same step, shortened by 0.9 * bound / change (one scaling: the logits change by
    0.61 against a bound of sqrt(0.01 * 4) = 0.2); the value network's step is the same."""
    env_a, env_b = counting_env(num_envs=4, seed=3), counting_env(num_envs=4, seed=3)
    try:
        seeding.set_random_seed(0)
        plain = _build(ActorCriticAlgorithm, env_a)
        trac = _build(trac_class(ActorCriticAlgorithm), env_b)
        trac._setup_trust_region(0.01)
        trac.load_state_dict(plain.state_dict())
        before = {k: v.clone() for k, v in plain.state_dict().items() if "network" in k}
        for alg in (plain, trac):
            torch.manual_seed(7)
            alg.train_iter()
        after_plain, after_trac = plain.state_dict(), trac.state_dict()
        ratios = []
        for key, old in before.items():
            step_plain = after_plain[key] - old
            step_trac = after_trac[key] - old
            if key.startswith("_value_network"):
                assert torch.allclose(step_trac, step_plain, atol=1e-7), key
            elif step_plain.abs().max() > 1e-6:
                ratio = (step_trac * step_plain).sum() / (step_plain * step_plain).sum()
                assert torch.allclose(step_trac, ratio * step_plain, rtol=1e-3, atol=1e-7), key
                ratios.append(float(ratio))
        bound = action_dist_bound(env_b.action_spec(), 0.01)
        (change,) = trac.trac_unadjusted_change
        assert trac.trac_adjust_steps == 1 and change > bound
        assert len(ratios) >= 4  # weights and biases of the hidden and projection layers
        assert all(r == pytest.approx(0.9 * bound / change, rel=1e-3) for r in ratios)
    finally:
        env_a.close()
        env_b.close()


def test_trac_algorithm_builds_the_trac_subclass_and_refuses_others():
    env = counting_env(num_envs=2)
    try:
        alg = TracAlgorithm(
            observation_spec=env.observation_spec(),
            action_spec=env.action_spec(),
            env=env,
            config=TrainerConfig(unroll_length=4),
            ac_algorithm_cls=PPOAlgorithm,
        )
        assert type(alg) is trac_class(PPOAlgorithm) and isinstance(alg, PPOAlgorithm)
        assert alg._trac_bounds == [pytest.approx(math.sqrt(0.01 * 4))]
        with pytest.raises(ValueError, match="TracAlgorithm.ac_algorithm_cls must be"):
            TracAlgorithm(
                observation_spec=env.observation_spec(),
                action_spec=env.action_spec(),
                ac_algorithm_cls=SacAlgorithm,
            )
    finally:
        env.close()
