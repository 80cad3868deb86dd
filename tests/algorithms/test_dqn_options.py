"""DQN options: ALF's ``critic_loss_ctor`` (the λ-return over the n-step rows by hand),
``q_optimizer``, ``q_network_cls`` and a percent ``LinearScheduler``; dueling and noisy
networks learning a tiny env, the noise drawn per rollout step and per update, determinism."""

import functools

import pytest
import torch

import alf
from alf.algorithms.dqn_algorithm import DqnAlgorithm
from alf.algorithms.td_loss import OneStepTDLoss, TDLoss
from alf.data_structures import StepType, TimeStep
from alf.layers.noisy import noisy_layers
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam, AdamTF
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import seeding
from alf.utils.schedulers import LinearScheduler, update_progress
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

ONE_ACTION = BoundedTensorSpec((), torch.int64, 4, 4)


def _dqn(n_step=3, **kwargs):
    args = dict(q_network_ctor=QNetwork, config=_config(n_step=n_step), n_step=n_step)
    args.update(kwargs)
    return DqnAlgorithm(TensorSpec((1,)), ONE_ACTION, **args)


# -- ALF's arguments ------------------------------------------------------------------


def test_critic_loss_ctor_gives_the_lambda_return_over_the_n_step_rows():
    """n = 3, λ = 0.5, TDLoss's squared loss. Q(s) = s, target Q'(s) = 2 s (one action)."""
    lam = 0.5
    alg = _dqn(critic_loss_ctor=functools.partial(TDLoss, gamma=GAMMA, td_lambda=lam))
    _set_linear(alg.q_network, [1.0], [0.0])
    _set_linear(alg.target_q_network, [2.0], [0.0])
    mid, last, first = StepType.MID, StepType.LAST, StepType.FIRST
    exp = _experience(
        obs=[[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 7.0], [4.0, 9.0, 8.0]],
        reward=[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 5.0], [3.0, 5.0, 6.0]],
        step_type=[[mid, mid, mid], [mid, mid, last], [mid, last, first], [mid, first, mid]],
        discount=[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 1.0]],
        action=[[4, 4, 4]] * 4,
    )
    g = GAMMA
    # a (no ending): y2 = r3 + g Q'3; y1 = r2 + g((1-λ) Q'2 + λ y2); y0 likewise
    y2 = 3 + g * 8
    y1 = 2 + g * ((1 - lam) * 6 + lam * y2)
    a = 1 + g * ((1 - lam) * 4 + lam * y1)
    b = 1 + g * ((1 - lam) * 4 + lam * 2)  # terminal at row 2: y1 = r2
    c = 1 + g * 4  # time limit at row 1: bootstraps from Q'(s_1) alone
    expected = torch.tensor([a, b, c])
    info = alg.train_steps(exp)
    loss = alg.calc_loss(info)
    torch.testing.assert_close(loss.priority, (expected - 1).abs())
    torch.testing.assert_close(loss.loss[0], (expected - 1) ** 2)
    # n = 1 (ALF's mini_batch_length=2): every λ gives the one-step target
    one = _dqn(n_step=1, critic_loss_ctor=functools.partial(TDLoss, gamma=GAMMA, td_lambda=0.95))
    one.load_state_dict(alg.state_dict())
    two_rows = exp._replace(
        time_step=exp.time_step._replace(**{k: v[:2] for k, v in exp.time_step._asdict().items()}),
        rollout_info=exp.rollout_info._replace(action=exp.rollout_info.action[:2]),
    )
    loss = one.calc_loss(one.train_steps(two_rows))
    torch.testing.assert_close(loss.priority, torch.tensor([g * 4, g * 4, g * 4]))


def test_critic_loss_arguments_are_checked():
    assert _dqn(critic_loss_ctor=functools.partial(TDLoss, gamma=0.9))._td_loss.gamma == 0.9
    assert _dqn()._td_loss.gamma == 0.99
    with pytest.raises(ValueError, match="gamma=0.5 differs from the critic loss's gamma=0.9"):
        _dqn(gamma=0.5, critic_loss_ctor=functools.partial(TDLoss, gamma=0.9))
    with pytest.raises(ValueError, match="give it to the loss"):
        _dqn(critic_loss_ctor=TDLoss, td_error_loss_fn=lambda t, p: (t - p) ** 2)
    with pytest.raises(ValueError, match="one-step critic loss"):
        _dqn(critic_loss_ctor=OneStepTDLoss)
    assert isinstance(_dqn(n_step=1, critic_loss_ctor=OneStepTDLoss)._td_loss, OneStepTDLoss)


def test_q_optimizer_optimizes_the_q_network():
    alg = _dqn(n_step=1, q_optimizer=AdamTF(lr=5e-4), optimizer=Adam(lr=1e-2))
    optimizers = alg.optimizers()
    assert len(optimizers) == 1  # the default optimizer is left nothing to optimize
    spec, torch_optimizer, params = optimizers[0]
    assert torch_optimizer.param_groups[0]["lr"] == 5e-4
    assert {id(p) for p in params} == {id(p) for p in alg.q_network.parameters()}


@pytest.fixture
def _clean_configs():
    alf.reset_configs()
    yield
    alf.reset_configs()


def test_alf_configuration_of_dqn_breakout_conf(_clean_configs):
    """``DqnAlgorithm`` configured with the arguments of ALF's ``dqn_breakout_conf.py``."""
    alf.config(
        "DqnAlgorithm",
        q_network_cls=functools.partial(QNetwork, fc_layer_params=(8,)),
        rollout_epsilon_greedy=LinearScheduler(
            progress_type="percent", schedule=[(0, 1.0), (0.1, 0.1), (1.0, 0.1)]
        ),
        critic_loss_ctor=functools.partial(TDLoss, td_lambda=0.95),
        q_optimizer=AdamTF(lr=5e-4),
    )
    env = counting_env(num_envs=2, seed=0)
    try:
        alg = DqnAlgorithm(
            env.observation_spec(), env.action_spec(), env=env, config=_config(n_step=1)
        )
        assert alg.q_network._fc_layers[0].output_size == 8
        assert isinstance(alg._td_loss, TDLoss) and alg._td_loss.td_lambda == 0.95
        assert alg.optimizers()[0][1].param_groups[0]["lr"] == 5e-4
        alg.train_iter()
        alg._random_initial_collect = False
        for percent, epsilon in ((0.0, 1.0), (0.05, 0.55), (0.5, 0.1)):
            update_progress(0, 0, percent)
            assert alg.current_rollout_epsilon() == pytest.approx(epsilon)
    finally:
        update_progress(0, 0, 0.0)
        env.close()


# -- dueling and noisy networks ------------------------------------------------------------


def _train(seed, num_iterations, **network):
    seeding.set_random_seed(seed)
    env = counting_env(num_envs=4, seed=seed)
    q_ctor = functools.partial(
        QNetwork, fc_layer_params=(32,), input_preprocessors=_one_hot_count(5), **network
    )
    alg = DqnAlgorithm(
        env.observation_spec(),
        env.action_spec(),
        reward_spec=env.reward_spec(),
        q_network_ctor=q_ctor,
        env=env,
        config=_config(),
        gamma=GAMMA,
        rollout_epsilon_greedy=0.0 if network.get("noisy") else 0.3,
        target_update_tau=0.1,
        target_update_period=1,
        optimizer=Adam(lr=1e-2),
    )
    for _ in range(num_iterations):
        alg.train_iter()
    return alg, env


@pytest.mark.parametrize("network", [dict(dueling=True), dict(noisy=True)], ids=str)
def test_dueling_and_noisy_dqn_learn_the_counting_env_optimum(network):
    # noisy nets explore only as far as their noise reaches: they take longer
    alg, env = _train(seed=0, num_iterations=100 if network.get("noisy") else 50, **network)
    eval_env = counting_env(num_envs=2, seed=7)
    try:
        assert evaluate(alg, eval_env) == COUNTING_OPTIMUM  # noisy: without exploration
        alg.eval()  # noisy: the mean network
        with torch.no_grad():
            q = alg.q_network(torch.tensor([[0.0], [3.0], [4.0]]))[0]
        # V*(s_t) = max_a Q*(s_t, a) = 3 + sum_{k=1}^{4-t} 0.9^k * 3 (the greedy actions'
        # values; the others are seen less, by noisy nets the least)
        torch.testing.assert_close(
            q.max(-1).values, torch.tensor([12.3, 5.7, 3.0]), atol=0.3, rtol=0
        )
    finally:
        env.close()
        eval_env.close()


def test_noise_is_drawn_before_every_rollout_step_and_update():
    alg, env = _train(seed=0, num_iterations=2, noisy=True)
    try:
        online, target = noisy_layers(alg.q_network), noisy_layers(alg.target_q_network)
        assert len(online) == len(target) == 2
        ts = TimeStep(step_type=torch.ones(3, dtype=torch.int32), observation=torch.zeros(3, 1))
        before = online[0].epsilon_in.clone()
        alg.rollout_step(ts, ())
        after_step = online[0].epsilon_in.clone()
        assert not torch.equal(before, after_step)
        alg.predict_step(ts, ())  # acting greedily draws nothing
        assert torch.equal(online[0].epsilon_in, after_step)
        target_before = target[0].epsilon_in.clone()
        mid = StepType.MID
        exp = _experience(
            [[0.0], [1.0]], [[0.0], [1.0]], [[mid], [mid]], [[1.0], [1.0]], [[0], [0]]
        )
        alg.train_steps(exp)  # an update's forward passes
        assert not torch.equal(online[0].epsilon_in, after_step)
        assert not torch.equal(target[0].epsilon_in, target_before)
        assert not torch.equal(target[0].epsilon_in, online[0].epsilon_in)  # independent
    finally:
        env.close()


@pytest.mark.parametrize("network", [dict(dueling=True), dict(noisy=True)], ids=str)
def test_same_seed_same_parameters(network):
    a, env_a = _train(seed=3, num_iterations=4, **network)
    b, env_b = _train(seed=3, num_iterations=4, **network)
    c, env_c = _train(seed=4, num_iterations=4, **network)
    pa, pb, pc = parameters_of(a), parameters_of(b), parameters_of(c)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert any(not torch.equal(pa[k], pc[k]) for k in pa)
    for env in (env_a, env_b, env_c):
        env.close()
