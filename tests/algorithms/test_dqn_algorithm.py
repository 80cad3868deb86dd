"""DQN: learning a tiny env, time-limit bootstrapping, n-step and double-DQN targets by hand,
epsilon schedules, determinism, checkpoint round trip."""

import functools

import pytest
import torch
import torch.nn.functional as F

from alf.algorithms.actor_critic_loss import element_wise_squared_loss
from alf.algorithms.config import TrainerConfig
from alf.algorithms.dqn_algorithm import DqnAlgorithm, DqnRolloutInfo
from alf.data_structures import Experience, StepType, TimeStep
from alf.environments import suite_gym
from alf.environments.utils import create_environment
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import seeding
from alf.utils.schedulers import update_progress
from tests.algorithms.algorithm_test_utils import (
    COUNTING_ENV,
    COUNTING_OPTIMUM,
    counting_env,
    evaluate,
    parameters_of,
)

GAMMA = 0.9


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One torch thread, as the trainer uses (``TrainerConfig.num_threads``): on a busy
    2-core machine a second intra-op thread makes tiny updates ~50x slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _one_hot_count(max_count):
    """Observation ``[B, 1]`` step count → one-hot ``[B, max_count + 1]`` (a tabular Q)."""
    return lambda x: F.one_hot(x.long().squeeze(-1).clamp(max=max_count), max_count + 1).float()


def _constant_feature(x):
    """Drops the step count: a Q that cannot tell time (the state of a time-limited MDP)."""
    return torch.ones_like(x)


def _config(n_step=1, **kwargs):
    args = dict(
        unroll_length=4,
        mini_batch_size=32,
        mini_batch_length=n_step + 1,
        num_updates_per_train_iter=4,
        whole_replay_buffer_training=False,
        clear_replay_buffer=False,
        replay_buffer_length=256,
        initial_collect_steps=8,
    )
    args.update(kwargs)
    return TrainerConfig(**args)


def _make(env, config, preprocessor=None, lr=1e-2, **kwargs):
    args = dict(
        gamma=GAMMA,
        rollout_epsilon_greedy=0.3,
        target_update_tau=0.1,
        target_update_period=1,
        optimizer=Adam(lr=lr),
    )
    args.update(kwargs)
    q_ctor = functools.partial(
        QNetwork, fc_layer_params=(32,), input_preprocessors=preprocessor or _one_hot_count(5)
    )
    return DqnAlgorithm(
        env.observation_spec(),
        env.action_spec(),
        reward_spec=env.reward_spec(),
        q_network_ctor=q_ctor,
        env=env,
        config=config,
        **args,
    )


def _train(seed, num_iterations, env=None, preprocessor=None, n_step=1, **kwargs):
    seeding.set_random_seed(seed)
    env = env or counting_env(num_envs=4, seed=seed)
    alg = _make(env, _config(n_step), preprocessor, n_step=n_step, **kwargs)
    for _ in range(num_iterations):
        alg.train_iter()
    return alg, env


def _q(alg, counts):
    with torch.no_grad():
        return alg.q_network(torch.as_tensor(counts, dtype=torch.float32).reshape(-1, 1))[0]


# -- learning ----------------------------------------------------------------------


def test_dqn_learns_counting_env_optimum_and_its_q_values():
    alg, env = _train(seed=0, num_iterations=50)
    eval_env = counting_env(num_envs=2, seed=7)
    try:
        assert evaluate(alg, eval_env) == COUNTING_OPTIMUM  # random play averages 7.5
        q = _q(alg, [0, 3, 4])
        # Q*(s_t, a) = a + sum_{k=1}^{4-t} 0.9^k * 3 (5 steps, then termination)
        expected = torch.tensor([[0.0, 1.0, 2.0, 3.0]]) + torch.tensor([[9.3], [2.7], [0.0]])
        torch.testing.assert_close(q, expected, atol=0.25, rtol=0)
    finally:
        env.close()
        eval_env.close()


def _counting_env_ending_at_20(terminate: bool, seed: int):
    load = functools.partial(
        suite_gym.load,
        terminate_at=20 if terminate else None,
        truncate_at=None if terminate else 20,
        num_actions=2,
    )
    return create_environment(
        env_name=COUNTING_ENV,
        env_load_fn=load,
        num_parallel_environments=4,
        nonparallel=True,
        seed=seed,
    )


def test_time_limit_bootstraps_to_the_infinite_horizon_value():
    """Reward = action in {0, 1}, the episode is cut after 20 steps by a time limit.

    A time limit is not part of the MDP, so the Q network gets no clock (constant
    features) and Q*(s, 1) = 1 / (1 - γ) = 10. Treating the cut as a termination
    would instead give q = 1 + γ q 19/20, i.e. about 6.9.
    """
    env = _counting_env_ending_at_20(terminate=False, seed=0)
    alg, _ = _train(seed=0, num_iterations=120, env=env, preprocessor=_constant_feature)
    try:
        q = _q(alg, [0, 10, 19])
        torch.testing.assert_close(q[:, 1], torch.full((3,), 10.0), atol=0.2, rtol=0)
    finally:
        env.close()


def test_termination_gives_the_finite_horizon_sum():
    """The same env ending by termination after 20 steps: Q(s_t, 1) is the finite sum
    (1 - γ^(20-t)) / (1 - γ), which needs the step count (one-hot) in the observation."""
    env = _counting_env_ending_at_20(terminate=True, seed=0)
    alg, _ = _train(seed=0, num_iterations=120, env=env, preprocessor=_one_hot_count(20))
    try:
        counts = torch.tensor([0, 10, 15, 19])
        expected = (1 - GAMMA ** (20 - counts.double())) / (1 - GAMMA)
        torch.testing.assert_close(_q(alg, counts)[:, 1], expected.float(), atol=0.2, rtol=0)
    finally:
        env.close()


# -- targets by hand -----------------------------------------------------------------


def _linear_dqn(n_step=1, double_dqn=True, num_actions=3, minimum=0):
    """A DQN whose Q networks are single linear layers from a 1-d observation (no env)."""
    action_spec = BoundedTensorSpec((), torch.int64, minimum, minimum + num_actions - 1)
    config = _config(n_step=n_step)
    alg = DqnAlgorithm(
        TensorSpec((1,)),
        action_spec,
        q_network_ctor=QNetwork,
        config=config,
        gamma=GAMMA,
        n_step=n_step,
        double_dqn=double_dqn,
        td_error_loss_fn=element_wise_squared_loss,
        optimizer=Adam(lr=1e-3),
    )
    return alg


def _set_linear(net, weight, bias):
    layer = net._fc_layers[0]
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight).reshape(-1, 1))
        layer.bias.copy_(torch.tensor(bias))


def _experience(obs, reward, step_type, discount, action):
    """Time-major ``[T, B]`` experience from python lists of rows."""
    ts = TimeStep(
        step_type=torch.tensor(step_type, dtype=torch.int32),
        reward=torch.tensor(reward),
        discount=torch.tensor(discount),
        observation=torch.tensor(obs).unsqueeze(-1),
    )
    action = torch.tensor(action)
    return Experience(time_step=ts, action=action, rollout_info=DqnRolloutInfo(action=action))


def _loss(alg, exp):
    info = alg.train_steps(exp)
    return info, alg.calc_loss(info)


def test_double_dqn_target_uses_online_argmax_and_target_values():
    # Online Q(s) = w s + b, target Q'(s) = w' s + b'; at s = 1:
    # Q = [1, 3, 2] (argmax 1), Q' = [5, 0, 4] (argmax 0).
    alg = _linear_dqn(double_dqn=True)
    _set_linear(alg.q_network, [1.0, 2.0, 1.0], [0.0, 1.0, 1.0])
    _set_linear(alg.target_q_network, [2.0, -1.0, 2.0], [3.0, 1.0, 2.0])
    mid, last = StepType.MID, StepType.LAST
    # Two sequences: s0 = 0 with actions 2 and 0, s1 = 1; the second ends by a time limit.
    exp = _experience(
        obs=[[0.0, 0.0], [1.0, 1.0]],
        reward=[[0.0, 0.0], [0.5, -1.0]],
        step_type=[[mid, mid], [mid, last]],
        discount=[[1.0, 1.0], [1.0, 1.0]],
        action=[[2, 0], [0, 0]],
    )
    q0 = torch.tensor([1.0, 0.0])  # Q(0, 2) = 1, Q(0, 0) = 0
    _, loss = _loss(alg, exp)
    target = torch.tensor([0.5, -1.0]) + GAMMA * 0.0  # Q'(1, argmax_a Q(1, a) = 1) = 0
    torch.testing.assert_close(loss.priority, (target - q0).abs())
    torch.testing.assert_close(loss.loss[0], (target - q0) ** 2)

    nature = _linear_dqn(double_dqn=False)
    nature.load_state_dict(alg.state_dict())
    _, loss = _loss(nature, exp)
    target = torch.tensor([0.5, -1.0]) + GAMMA * 5.0  # max_a Q'(1, a) = 5
    torch.testing.assert_close(loss.priority, (target - q0).abs())


def test_n_step_target_by_hand_with_termination_and_time_limit():
    """n = 3. Q(s) = s for the only action (minimum 4), target Q'(s) = 2 s."""
    alg = _linear_dqn(n_step=3, num_actions=1, minimum=4)
    _set_linear(alg.q_network, [1.0], [0.0])
    _set_linear(alg.target_q_network, [2.0], [0.0])
    mid, last, first = StepType.MID, StepType.LAST, StepType.FIRST
    # Sequence a: no ending; b: terminal at row 2; c: time limit at row 1; then a new episode.
    exp = _experience(
        obs=[[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 7.0], [4.0, 9.0, 8.0]],
        reward=[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 5.0], [3.0, 5.0, 6.0]],
        step_type=[[mid, mid, mid], [mid, mid, last], [mid, last, first], [mid, first, mid]],
        discount=[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 1.0]],
        action=[[4, 4, 4]] * 4,
    )
    g = GAMMA
    expected = torch.tensor(
        [
            1 + g * 2 + g**2 * 3 + g**3 * 2 * 4.0,  # 3 rewards, bootstrap Q'(s_3)
            1 + g * 2,  # terminated at row 2: no bootstrap
            1 + g * 2 * 2.0,  # time limit at row 1: bootstrap Q'(s_1)
        ]
    )
    _, loss = _loss(alg, exp)
    torch.testing.assert_close(loss.priority, (expected - 1.0).abs())
    torch.testing.assert_close(loss.loss[0], (expected - 1.0) ** 2)


def test_update_trains_row_zero_only_and_skips_last_rows():
    alg = _linear_dqn(n_step=1, num_actions=1)
    _set_linear(alg.q_network, [0.0], [0.0])
    _set_linear(alg.target_q_network, [0.0], [0.0])
    mid, last = StepType.MID, StepType.LAST
    # Row 0 of the second sequence is LAST: its (ignored) action must not be trained.
    exp = _experience(
        obs=[[1.0, 1.0], [1.0, 1.0]],
        reward=[[0.0, 0.0], [2.0, 100.0]],
        step_type=[[mid, last], [mid, mid]],
        discount=[[1.0, 0.0], [1.0, 1.0]],
        action=[[0, 0], [0, 0]],
    )
    loss = alg.update_from_experience(exp)
    assert float(loss.loss) == pytest.approx(4.0)  # (2 - 0)^2 from the first sequence only


# -- exploration ---------------------------------------------------------------------


def test_rollout_epsilon_schedule_and_random_initial_collection():
    env = counting_env(num_envs=2, seed=0)
    try:
        alg = _make(
            env, _config(initial_collect_steps=4), rollout_epsilon_greedy=[(0, 1.0), (0.5, 0.1)]
        )
        assert alg.current_rollout_epsilon() == 1.0  # empty buffer: random actions
        alg.train_iter()  # 4 steps per env: the initial collection is done
        update_progress(0, 0, 0.25)
        assert alg.current_rollout_epsilon() == pytest.approx(0.55)
        update_progress(0, 0, 0.9)
        assert alg.current_rollout_epsilon() == pytest.approx(0.1)
    finally:
        update_progress(0, 0, 0.0)
        env.close()


def test_predict_is_greedy_and_rollout_explores():
    alg = _linear_dqn(num_actions=3, minimum=-1)
    _set_linear(alg.q_network, [0.0, 0.0, 0.0], [0.0, 0.0, 1.0])  # best action: +1
    ts = TimeStep(step_type=torch.ones(200, dtype=torch.int32), observation=torch.zeros(200, 1))
    assert torch.all(alg.predict_step(ts, ()).output == 1)
    alg._rollout_epsilon = lambda: 0.5
    alg._random_initial_collect = False
    step = alg.rollout_step(ts, ())
    assert torch.equal(step.output, step.info.action)
    counts = torch.bincount(step.output + 1, minlength=3)
    # greedy w.p. 0.5 + 0.5/3; each other action w.p. 1/6
    assert counts[2] > 100 and counts[0] > 15 and counts[1] > 15


def test_config_must_sample_sequences_of_n_step_plus_one():
    with pytest.raises(ValueError, match="mini_batch_length=3"):
        DqnAlgorithm(
            TensorSpec((1,)),
            BoundedTensorSpec((), torch.int64, 0, 1),
            config=_config(n_step=1),
            n_step=2,
        )
    with pytest.raises(ValueError, match="whole_replay_buffer_training"):
        DqnAlgorithm(
            TensorSpec((1,)),
            BoundedTensorSpec((), torch.int64, 0, 1),
            config=_config(whole_replay_buffer_training=True),
        )


# -- determinism, checkpoints -----------------------------------------------------------


def test_dqn_same_seed_same_parameters_different_seed_different():
    a, env_a = _train(seed=3, num_iterations=4)
    b, env_b = _train(seed=3, num_iterations=4)
    c, env_c = _train(seed=4, num_iterations=4)
    pa, pb, pc = parameters_of(a), parameters_of(b), parameters_of(c)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert any(not torch.equal(pa[k], pc[k]) for k in pa)
    for env in (env_a, env_b, env_c):
        env.close()


def test_dqn_checkpoint_round_trip_gives_identical_outputs():
    a, env = _train(seed=5, num_iterations=4)
    try:
        state = a.state_dict()
        assert any(k.startswith("_optimizers.") for k in state)
        seeding.set_random_seed(99)
        b = _make(env, _config())
        b.load_state_dict(state)
        obs = torch.arange(6, dtype=torch.float32).reshape(6, 1)
        ts = TimeStep(step_type=torch.ones(6, dtype=torch.int32), observation=obs)
        assert torch.equal(a.predict_step(ts, ()).output, b.predict_step(ts, ()).output)
        assert torch.equal(a.q_network(obs)[0], b.q_network(obs)[0])
        assert torch.equal(a.target_q_network(obs)[0], b.target_q_network(obs)[0])
        opt_a = a.optimizers()[0][1].state_dict()["state"]
        opt_b = b.optimizers()[0][1].state_dict()["state"]
        assert all(torch.equal(opt_a[i]["exp_avg"], opt_b[i]["exp_avg"]) for i in opt_a)
    finally:
        env.close()
