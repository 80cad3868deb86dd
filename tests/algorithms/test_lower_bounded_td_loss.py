"""LowerBoundedTDLoss: targets and losses by hand, the n-step bound, refusals, and SAC
learning with the replay buffer's episodic returns reaching the loss."""

from __future__ import annotations

import functools

import pytest
import torch

import alf
from alf.algorithms.config import TrainerConfig
from alf.algorithms.sac_algorithm import SacAlgorithm
from alf.algorithms.td_loss import LowerBoundedTDLoss, TDLoss
from alf.data_structures import StepType
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import COUNTING_OPTIMUM, counting_env, evaluate

F, M, L = int(StepType.FIRST), int(StepType.MID), int(StepType.LAST)
G = 0.9


def _rows():
    """``[T=3, B=3]`` rows: columns 0 and 1 are MID steps, column 2 ends terminally."""
    reward = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 1.0], [1.0, 0.5, 3.0]])
    step_type = torch.tensor([[M, F, M], [M, M, L], [M, M, F]])
    discount = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    target_value = torch.tensor([[0.0, 0.0, 0.0], [2.0, 1.0, 5.0], [3.0, 4.0, 1.0]])
    value = torch.tensor([[1.0, 2.0, 3.0], [0.5, 1.5, 2.5], [9.0, 9.0, 9.0]])
    return reward, step_type, discount, value, target_value


def test_targets_and_loss_by_hand():
    reward, step_type, discount, value, target_value = _rows()
    # one-step targets (td_lambda=0): y_t = r_{t+1} + G d_{t+1} V'_{t+1}; LAST: V'_t
    y = torch.tensor(
        [[1 + G * 2, 2 + G * 1, 1 + 0.0], [1 + G * 3, 0.5 + G * 4, 5.0]]  # row 1 col 2: LAST
    )
    returns = torch.tensor([[5.0, -1000.0, 1.0], [2.0, 7.0, -1000.0], [0.0, 0.0, 0.0]])
    for w in (1.0, 0.5):
        loss = LowerBoundedTDLoss(gamma=G, td_lambda=0.0, lb_target_q=w)
        info = loss(reward, step_type, discount, value, target_value, discounted_return=returns)
        known = returns[:-1] > -1000
        bounded = torch.where(known, (1 - w) * y + w * torch.maximum(y, returns[:-1]), y)
        assert torch.allclose(info.extra.target[:-1], bounded)
        expected = (bounded - value[:-1]) ** 2
        expected[1, 2] = 0.0  # a LAST row is not trained
        assert torch.allclose(info.loss[:-1], expected)
        assert torch.equal(info.loss[-1], torch.zeros(3))
    # the bound at (0, 0): max(2.8, 5) = 5; at (1, 1): max(4.1, 7) = 7; others keep y
    full = LowerBoundedTDLoss(gamma=G, td_lambda=0.0, lb_target_q=1.0)
    target = full(reward, step_type, discount, value, target_value, returns).extra.target
    assert torch.allclose(target[:-1], torch.tensor([[5.0, 2.9, 1.0], [3.7, 7.0, 5.0]]))
    # without returns, or lb_target_q=0: plain TD; TDLoss ignores the returns
    plain = TDLoss(gamma=G, td_lambda=0.0)(reward, step_type, discount, value, target_value)
    for info in (
        full(reward, step_type, discount, value, target_value),
        LowerBoundedTDLoss(gamma=G, td_lambda=0.0)(
            reward, step_type, discount, value, target_value, returns
        ),
        TDLoss(gamma=G, td_lambda=0.0)(reward, step_type, discount, value, target_value, returns),
    ):
        assert torch.equal(info.loss, plain.loss)


def test_several_critics_are_bounded_alike():
    reward, step_type, discount, value, target_value = _rows()
    returns = torch.full((3, 3), 10.0)
    loss = LowerBoundedTDLoss(gamma=G, td_lambda=0.0, lb_target_q=1.0)
    values = torch.stack([value, value + 1], -1)
    info = loss(reward, step_type, discount, values, target_value, returns)
    valid = (step_type[:-1] != L).float()
    expected = ((10 - value[:-1]) ** 2 + (10 - value[:-1] - 1) ** 2) * valid
    assert torch.allclose(info.loss[:-1], expected)


def test_nstep_bootstrap_bounds_row_zero_and_trains_only_it():
    g = G
    reward = torch.tensor([[0.0, 0.0], [1.0, 1.0], [-5.0, 2.0], [10.0, 100.0]])
    step_type = torch.tensor([[M, M], [M, M], [M, L], [M, F]])
    discount = torch.ones(4, 2)
    target_value = torch.tensor([[0.0, 0.0], [4.0, 4.0], [1.0, 3.0], [2.0, 50.0]])
    value = torch.zeros(4, 2)
    # column 0: n = 1, 2, 3
    n1 = 1 + g * 4
    n2 = 1 + g * (-5) + g * g * 1
    n3 = 1 + g * (-5) + g * g * 10 + g**3 * 2
    # column 1 reaches a LAST at row 2: n >= 2 bootstrap there, nothing after it
    m1, m2 = 1 + g * 4, 1 + g * 2 + g * g * 3
    loss = LowerBoundedTDLoss(gamma=g, td_lambda=1.0, improve_w_nstep_bootstrap=True)
    info = loss(reward, step_type, discount, value, target_value)
    assert torch.allclose(info.extra.target[0], torch.tensor([max(n1, n2, n3), max(m1, m2)]))
    assert torch.allclose(info.loss[0], info.extra.target[0] ** 2)
    assert torch.equal(info.loss[1:], torch.zeros(3, 2))
    only = LowerBoundedTDLoss(
        gamma=g, td_lambda=1.0, improve_w_nstep_bootstrap=True, improve_w_nstep_only=True
    )
    target = only(reward, step_type, discount, value, target_value).extra.target[0]
    assert torch.allclose(target, torch.tensor([max(n1, n3), max(m1, m2)]))


@pytest.mark.parametrize(
    "kwargs, arg",
    [
        (dict(normalize_target=True), "normalize_target"),
        (dict(improve_w_goal_return=True), "improve_w_goal_return"),
        (dict(reward_multiplier=2.0), "reward_multiplier"),
        (dict(positive_reward=False), "positive_reward"),
        (dict(improve_w_nstep_bootstrap=True), "improve_w_nstep_bootstrap"),
        (dict(improve_w_nstep_only=True), "improve_w_nstep_only"),
        (dict(lb_target_q=1.5), "lb_target_q"),
    ],
)
def test_refused_settings_name_their_argument(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        LowerBoundedTDLoss(**kwargs)


# -- learning with the replay buffer's returns ---------------------------------------------


class _Recording(LowerBoundedTDLoss):
    """Keeps the returns it was given (to check that they arrive)."""

    seen: list = []

    def __call__(self, *args, discounted_return=()):
        _Recording.seen.append(discounted_return)
        return super().__call__(*args, discounted_return=discounted_return)


def test_sac_learns_with_lower_bounded_targets_from_the_replay_buffer():
    """Actor-less discrete SAC on CountingEnv (terminates after 5 steps, so returns
    become known) with ``lb_target_q=1``; the sampled steps' episodic returns reach the
    critic loss as ``[T, B]``, equal to the buffer's."""
    alf.reset_configs()
    alf.config("ReplayBuffer", record_episodic_return=True, gamma=G)
    _Recording.seen = []
    seeding.set_random_seed(0)
    env = counting_env(num_envs=4, seed=0)
    eval_env = counting_env(num_envs=2, seed=7)
    try:
        config = TrainerConfig(
            unroll_length=4,
            mini_batch_length=2,
            mini_batch_size=64,
            num_updates_per_train_iter=4,
            whole_replay_buffer_training=False,
            clear_replay_buffer=False,
            replay_buffer_length=1000,
            initial_collect_steps=8,
        )
        alg = SacAlgorithm(
            observation_spec=env.observation_spec(),
            action_spec=env.action_spec(),
            reward_spec=env.reward_spec(),
            env=env,
            config=config,
            actor_network_ctor=None,
            critic_network_ctor=None,
            q_network_ctor=functools.partial(QNetwork, fc_layer_params=(32, 32)),
            critic_loss_ctor=functools.partial(_Recording, gamma=G, td_lambda=0.0, lb_target_q=1.0),
            critic_optimizer=Adam(lr=3e-3),
            alpha_optimizer=Adam(lr=3e-3),
        )
        for _ in range(40):
            alg.train_iter()
        buffer = alg.replay_buffer
        assert buffer.records_episodic_return
        returns = [r for r in _Recording.seen if torch.is_tensor(r)]
        assert len(returns) == len(_Recording.seen) > 0
        assert returns[0].shape == (2, 64)
        known = torch.cat([r.reshape(-1) for r in returns]) > -1000
        assert 0.3 < float(known.float().mean()) < 1.0  # the running episodes are unknown
        assert evaluate(alg, eval_env) == COUNTING_OPTIMUM  # random: 7.5
    finally:
        env.close()
        eval_env.close()
        alf.reset_configs()
