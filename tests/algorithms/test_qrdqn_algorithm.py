"""QR-DQN: the quantile Huber loss and the n-step quantile target by hand (a terminal and a
time-limit LAST; double and Nature bootstrap actions), the loss's minimizers are the
midpoint quantiles, learning a tiny env, determinism; CartPole in a slow test."""

import functools
import importlib.util

import pytest
import torch

from alf.algorithms.qrdqn_algorithm import QrdqnAlgorithm, quantile_huber_loss
from alf.algorithms.td_loss import TDLoss
from alf.data_structures import StepType, TimeStep
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import (
    COUNTING_OPTIMUM,
    counting_env,
    evaluate,
    parameters_of,
)
from tests.algorithms.test_dqn_algorithm import (
    GAMMA,
    _config,
    _experience,
    _one_hot_count,
    _set_linear,
)


def test_quantile_huber_loss_by_hand():
    # N = 2: midpoints τ = 1/4, 3/4. Pairs u = T_j - θ_i, weight |τ_i - 1{u < 0}|,
    # Huber(u) = u²/2 if |u| <= 1 else |u| - 1/2.
    quantiles = torch.tensor([[0.0, 1.0], [2.0, -1.0]], requires_grad=True)
    target = torch.tensor([[0.5, 3.0], [0.0, 0.0]])
    loss = quantile_huber_loss(quantiles, target)
    # sample 0: i=0 (τ=.25): u = .5, 3 -> (.25*.125 + .25*2.5)/2 = .328125
    #           i=1 (τ=.75): u = -.5, 2 -> (.25*.125 + .75*1.5)/2 = .578125
    # sample 1: i=0 (τ=.25): u = -2, -2 -> .75*1.5 = 1.125; i=1 (τ=.75): u = 1, 1 -> .75*.5
    torch.testing.assert_close(loss, torch.tensor([0.90625, 1.5]))
    loss.sum().backward()
    # d/dθ: sample 1, i=0: -(.75 * sign(u) * 1) = +.75; i=1: -(.75 * u) = -.75
    torch.testing.assert_close(quantiles.grad[1], torch.tensor([0.75, -0.75]))


def test_quantile_huber_loss_matches_sb3_contrib():
    if importlib.util.find_spec("sb3_contrib") is None:
        pytest.skip("sb3-contrib is not installed")
    from sb3_contrib.common.utils import quantile_huber_loss as sb3_loss

    torch.manual_seed(0)
    quantiles, target = 3 * torch.randn(16, 5), 3 * torch.randn(16, 5)
    expected = sb3_loss(quantiles, target, sum_over_quantiles=True)
    torch.testing.assert_close(quantile_huber_loss(quantiles, target).mean(), expected)


def test_minimizing_the_loss_gives_the_midpoint_quantiles():
    """Quantiles fitted to samples of U(0, 100) (wide enough for the Huber part to matter
    little) land near the quantiles at τ = 1/8, 3/8, 5/8, 7/8: 12.5, 37.5, 62.5, 87.5."""
    torch.manual_seed(0)
    theta = torch.nn.Parameter(torch.full((1, 4), 50.0))
    opt = torch.optim.Adam([theta], lr=1.0)
    samples = torch.rand(1, 4000) * 100
    for _ in range(400):
        opt.zero_grad()
        quantile_huber_loss(theta, samples).sum().backward()
        opt.step()
    torch.testing.assert_close(
        theta[0].detach(), torch.tensor([12.5, 37.5, 62.5, 87.5]), atol=2.5, rtol=0
    )


def _linear_qrdqn(n_step=3, double_dqn=True, **kwargs):
    """QR-DQN with N = 2 quantiles of 2 actions, linear in a 1-d observation (no env)."""
    kwargs.setdefault("q_network_ctor", functools.partial(QNetwork, num_quantiles=2))
    return QrdqnAlgorithm(
        TensorSpec((1,)),
        BoundedTensorSpec((), torch.int64, 0, 1),
        config=_config(n_step=n_step),
        gamma=GAMMA,
        n_step=n_step,
        double_dqn=double_dqn,
        optimizer=Adam(lr=1e-3),
        **kwargs,
    )


def _set_networks(alg):
    # units a * N + j. Online: θ(s, 0) = [s - 1, s + 1] (mean s), θ(s, 1) = [1.5, 2.5]
    # (mean 2): greedy action 0 for s > 2. Target: θ'(s, 0) = [2s, 2s + 2] (mean 2s + 1),
    # θ'(s, 1) = [10, 12] (mean 11): greedy action 0 for s > 5.
    _set_linear(alg.q_network, [1.0, 1.0, 0.0, 0.0], [-1.0, 1.0, 1.5, 2.5])
    _set_linear(alg.target_q_network, [2.0, 2.0, 0.0, 0.0], [0.0, 2.0, 10.0, 12.0])


def _sequences():
    """n = 3. a: no ending; b: terminal LAST at row 2; c: time-limit LAST at row 1, then a
    new episode."""
    mid, last, first = StepType.MID, StepType.LAST, StepType.FIRST
    return _experience(
        obs=[[1.0, 1.0, 1.0], [2.0, 2.0, 3.0], [3.0, 3.0, 7.0], [4.0, 9.0, 8.0]],
        reward=[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 5.0], [3.0, 5.0, 6.0]],
        step_type=[[mid, mid, mid], [mid, mid, last], [mid, last, first], [mid, first, mid]],
        discount=[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 1.0]],
        action=[[0, 1, 0]] + [[0, 0, 0]] * 3,
    )


@pytest.mark.parametrize("double_dqn", [True, False])
def test_n_step_quantile_target_by_hand(double_dqn):
    alg = _linear_qrdqn(double_dqn=double_dqn)
    _set_networks(alg)
    g = GAMMA
    # a: s_3 = 4: online greedy 0 (4 > 2) -> θ'(4, 0) = [8, 10]; target greedy 1 -> [10, 12]
    # c: s_1 = 3: online greedy 0 -> θ'(3, 0) = [6, 8]; target greedy 1 -> [10, 12]
    boot_a = torch.tensor([8.0, 10.0]) if double_dqn else torch.tensor([10.0, 12.0])
    boot_c = torch.tensor([6.0, 8.0]) if double_dqn else torch.tensor([10.0, 12.0])
    target = torch.stack(
        [
            1 + g * 2 + g**2 * 3 + g**3 * boot_a,  # three rewards, then the quantiles at s_3
            torch.full((2,), 1 + g * 2),  # terminal: the reward sum for every quantile
            1 + g * boot_c,  # time limit: bootstraps from the final observation
        ]
    )
    # θ(1, a_0): a: action 0 -> [0, 2]; b: action 1 -> [1.5, 2.5]; c: action 0 -> [0, 2]
    prediction = torch.tensor([[0.0, 2.0], [1.5, 2.5], [0.0, 2.0]])
    info = alg.train_steps(_sequences())
    assert info.q_value.shape == info.target_q_value.shape == (4, 3, 2)
    torch.testing.assert_close(info.q_value[0], prediction)
    loss = alg.calc_loss(info)
    expected = quantile_huber_loss(prediction, target)
    torch.testing.assert_close(loss.loss[0], expected)
    torch.testing.assert_close(loss.priority, expected)
    assert torch.all(loss.loss[1:] == 0)


def test_greedy_in_the_mean_and_argument_checks():
    alg = _linear_qrdqn(n_step=1)
    _set_networks(alg)
    ts = TimeStep(
        step_type=torch.ones(2, dtype=torch.int32), observation=torch.tensor([[1.0], [3.0]])
    )
    step = alg.predict_step(ts, ())
    assert step.output.tolist() == [1, 0]  # means: s = 1: [1, 2]; s = 3: [3, 2]
    with pytest.raises(ValueError, match="td_error_loss_fn does not apply"):
        _linear_qrdqn(td_error_loss_fn=lambda t, p: (t - p) ** 2)
    with pytest.raises(ValueError, match="needs td_lambda=1"):
        _linear_qrdqn(critic_loss_ctor=functools.partial(TDLoss, td_lambda=0.9, gamma=GAMMA))
    with pytest.raises(ValueError, match="needs a quantile network"):
        _linear_qrdqn(q_network_ctor=QNetwork)


def _train(seed, num_iterations):
    seeding.set_random_seed(seed)
    env = counting_env(num_envs=4, seed=seed)
    alg = QrdqnAlgorithm(
        env.observation_spec(),
        env.action_spec(),
        reward_spec=env.reward_spec(),
        q_network_ctor=functools.partial(
            QNetwork, fc_layer_params=(32,), input_preprocessors=_one_hot_count(5), num_quantiles=8
        ),
        env=env,
        config=_config(),
        gamma=GAMMA,
        rollout_epsilon_greedy=0.3,
        target_update_tau=0.1,
        target_update_period=1,
        optimizer=Adam(lr=1e-2),
    )
    for _ in range(num_iterations):
        alg.train_iter()
    return alg, env


def test_qrdqn_learns_counting_env_optimum_and_its_q_values():
    alg, env = _train(seed=0, num_iterations=50)
    eval_env = counting_env(num_envs=2, seed=7)
    try:
        assert evaluate(alg, eval_env) == COUNTING_OPTIMUM
        with torch.no_grad():
            q = alg.q_network(torch.tensor([[0.0], [3.0], [4.0]]))[0].mean(-1)
        expected = torch.tensor([[0.0, 1.0, 2.0, 3.0]]) + torch.tensor([[9.3], [2.7], [0.0]])
        torch.testing.assert_close(q, expected, atol=0.25, rtol=0)
    finally:
        env.close()
        eval_env.close()


def test_qrdqn_same_seed_same_parameters():
    a, env_a = _train(seed=3, num_iterations=4)
    b, env_b = _train(seed=3, num_iterations=4)
    c, env_c = _train(seed=4, num_iterations=4)
    pa, pb, pc = parameters_of(a), parameters_of(b), parameters_of(c)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert any(not torch.equal(pa[k], pc[k]) for k in pa)
    for env in (env_a, env_b, env_c):
        env.close()
