"""ALF's SAC options: ``parameter_reset_period`` (``PeriodicReset``) and
``reproduce_locomotion``."""

from __future__ import annotations

import functools
import io

import pytest
import torch

from alf.algorithms.config import TrainerConfig
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork
from alf.algorithms.td_loss import OneStepTDLoss
from alf.algorithms.transitions import flat_rows
from alf.environments import suite_gym
from alf.environments.utils import create_environment
from alf.networks.critic_networks import CriticNetwork
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam
from alf.utils import seeding
from alf.utils.periodic_reset import PeriodicReset
from tests.algorithms.algorithm_test_utils import counting_env, evaluate

CONTINUOUS_COUNTING_ENV = "alf.environments.toy_envs:ContinuousCountingEnv-v0"
CONTINUOUS_OPTIMUM = 30.0  # 5 steps of 3 + 3; a random policy gets 10


@pytest.fixture(autouse=True)
def _one_torch_thread():
    num_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(num_threads)


def _env(num_envs=4, seed=0):
    return create_environment(
        env_name=CONTINUOUS_COUNTING_ENV,
        env_load_fn=suite_gym.load,
        num_parallel_environments=num_envs,
        nonparallel=True,
        seed=seed,
    )


def _sac(env, initial_collect_steps=8, lr=3e-3, **kwargs):
    hidden = (32, 32)
    config = TrainerConfig(
        unroll_length=4,
        mini_batch_length=2,
        mini_batch_size=64,
        num_updates_per_train_iter=4,
        whole_replay_buffer_training=False,
        clear_replay_buffer=False,
        replay_buffer_length=1000,
        initial_collect_steps=initial_collect_steps,
    )
    return SacAlgorithm(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=config,
        actor_network_ctor=functools.partial(SquashedNormalActorNetwork, fc_layer_params=hidden),
        critic_network_ctor=functools.partial(CriticNetwork, joint_fc_layer_params=hidden),
        q_network_ctor=functools.partial(QNetwork, fc_layer_params=hidden),
        critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=0.9),
        actor_optimizer=Adam(lr=lr),
        critic_optimizer=Adam(lr=lr),
        alpha_optimizer=Adam(lr=lr),
        **kwargs,
    )


def _tensors(module):
    return [t.detach().clone() for t in [*module.parameters(), *module.buffers()]]


def _equal(a, b):
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


# -- parameter_reset_period -------------------------------------------------------------


def test_reset_at_every_third_iteration_gives_fresh_weights_and_keeps_the_optimizers():
    """Period 3: the resets come after iterations 3 and 6 (the first iteration, initial
    collection only, counts too, as ALF's counter). At a reset the actor and the critics
    get the weights of fresh copies built from the RNG at that moment (actor first),
    log α its initial value, the target critics a hard copy of the new critics (their
    update counter restarts); the optimizers' moments are left as they were."""
    seeding.set_random_seed(0)
    env = _env()
    try:
        alg = _sac(env, parameter_reset_period=3, initial_log_alpha=0.5)
        reset = alg._periodic_reset
        seen = []
        reset_models = reset.reset

        def spy():
            seen.append(
                dict(
                    rng=torch.get_rng_state(),
                    moments=[
                        [s["exp_avg"].clone() for s in opt.state.values()]
                        for _, opt, _ in alg.optimizers()
                    ],
                    log_alpha=float(alg.log_alpha.detach()),
                )
            )
            reset_models()

        reset.reset = spy
        for i in range(1, 8):
            alg.train_iter()
            assert reset.num_calls == i % 3 and len(seen) == i // 3
            if i == 1:
                assert alg.initial_collect_pending()  # nothing trained yet, but counted
            if i == 3:
                assert seen[0]["log_alpha"] != 0.5
                assert float(alg.log_alpha.detach()) == 0.5
                rng = torch.get_rng_state()
                torch.set_rng_state(seen[0]["rng"])
                actor, critics = alg.actor_network.copy(), alg.critic_networks.copy()
                torch.set_rng_state(rng)
                assert _equal(_tensors(alg.actor_network), _tensors(actor))
                assert _equal(_tensors(alg.critic_networks), _tensors(critics))
                assert _equal(_tensors(alg.target_critic_networks), _tensors(critics))
                assert alg._target_updater._num_calls == 0
                moments = [
                    [s["exp_avg"] for s in opt.state.values()] for _, opt, _ in alg.optimizers()
                ]
                assert all(_equal(a, b) for a, b in zip(moments, seen[0]["moments"]))
                assert any(m.abs().sum() > 0 for ms in moments for m in ms)
    finally:
        env.close()


def test_periodic_reset_of_a_parameter_and_a_module_list_by_hand():
    """ALF's ``PeriodicReset``: a parameter back to its value when the object was built; a
    ``ModuleList`` of networks each from a fresh copy; post-processings after; a negative
    (scheduled) period never resets, and the counter still counts."""
    seeding.set_random_seed(1)
    env = counting_env(num_envs=1)
    try:
        alg = _sac(env)  # discrete: the critics are a ModuleList of QNetworks
    finally:
        env.close()
    param = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    period = [2]
    calls = []
    reset = PeriodicReset(
        [alg.critic_networks, param, None],
        period=lambda: period[0],
        post_processings=[lambda: calls.append(1)],
    )
    with torch.no_grad():
        param.add_(5.0)
        for p in alg.critic_networks.parameters():
            p.add_(1.0)
    assert reset() is False and reset.num_calls == 1
    rng = torch.get_rng_state()
    assert reset() is True and reset.num_calls == 0 and calls == [1]
    torch.set_rng_state(rng)
    fresh = [q.copy() for q in alg.critic_networks]
    for q, f in zip(alg.critic_networks, fresh):
        assert _equal(_tensors(q), _tensors(f))
    assert torch.equal(param.detach(), torch.tensor([1.0, 2.0]))
    period[0] = -1
    assert not any(reset() for _ in range(5)) and reset.num_calls == 5
    with pytest.raises(TypeError, match="^PeriodicReset: ReLU is neither a parameter nor"):
        PeriodicReset([torch.nn.ReLU()])


def test_reset_counter_is_checkpointed_so_a_resume_resets_at_the_same_iteration():
    """ALF's counter is a Python int (a resumed run starts it at 0); here it is saved."""
    seeding.set_random_seed(2)
    env = _env(num_envs=2)
    try:
        a = _sac(env, parameter_reset_period=3)
        for _ in range(4):
            a.train_iter()
        assert a._periodic_reset.num_calls == 1
        buffer = io.BytesIO()
        torch.save(a.state_dict(), buffer)
        buffer.seek(0)
        state = torch.load(buffer, weights_only=True)
        assert int(state["_periodic_reset._count"]) == 1
        b = _sac(env, parameter_reset_period=3)
        b.load_state_dict(state)
        assert b._periodic_reset.num_calls == 1
        assert [b._periodic_reset() for _ in range(2)] == [False, True]
        assert [a._periodic_reset() for _ in range(2)] == [False, True]
        # without a reset period nothing is added to the state
        plain = _sac(env)
        assert plain._periodic_reset is None
        assert not any(k.startswith("_periodic_reset") for k in plain.state_dict())
    finally:
        env.close()


def test_sac_with_parameter_resets_still_learns_the_continuous_counting_env():
    """One reset, after iteration 60 of 110: right after it the policy is a fresh one (a
    random policy gets 10); the replay buffer is kept, and the 50 iterations after it
    relearn the optimum."""
    seeding.set_random_seed(0)
    env = _env(seed=0)
    eval_env = _env(num_envs=2, seed=7)
    try:
        alg = _sac(env, parameter_reset_period=60)
        for _ in range(60):
            alg.train_iter()
        assert alg._periodic_reset.num_calls == 0  # reset
        assert evaluate(alg, eval_env) < 0.6 * CONTINUOUS_OPTIMUM
        for _ in range(50):
            alg.train_iter()
        assert evaluate(alg, eval_env) > 0.9 * CONTINUOUS_OPTIMUM
    finally:
        env.close()
        eval_env.close()


def test_a_scheduled_reset_period_is_read_at_every_iteration():
    """``[(progress, period), ...]`` (a piecewise-linear schedule over training): a
    negative period for now, so no reset, the counter counting."""
    env = _env(num_envs=1)
    try:
        alg = _sac(env, parameter_reset_period=[(0, -1.0), (1.0, 10.0)])
        for _ in range(3):
            alg.train_iter()
        assert alg._periodic_reset.num_calls == 3
    finally:
        env.close()


@pytest.mark.parametrize("period", [0, 0.5])
def test_bad_reset_period_is_a_one_line_error_naming_the_argument(period):
    env = _env(num_envs=1)
    try:
        with pytest.raises(
            ValueError,
            match=rf"^SacAlgorithm.parameter_reset_period must be >= 1 \(iterations\), or "
            rf"negative for no reset, got {period}$",
        ):
            _sac(env, parameter_reset_period=period)
    finally:
        env.close()


# -- reproduce_locomotion ---------------------------------------------------------------


def _actor_inputs_with_grad(alg, experience):
    inputs = []
    hook = alg.actor_network.register_forward_hook(
        lambda module, args, output: inputs.append(args[0]) if torch.is_grad_enabled() else None
    )
    try:
        alg.train_steps(experience)
    finally:
        hook.remove()
    return inputs


@pytest.mark.parametrize("locomotion", [False, True])
def test_reproduce_locomotion_trains_the_policy_at_the_next_states(locomotion):
    """ALF masks the policy loss of row 0 and the critic loss of the last row: the actor
    and α learn at s_{t+1}, the critics at s_t (the actor sees rows 1: with gradient)."""
    seeding.set_random_seed(0)
    env = _env(num_envs=2)
    try:
        alg = _sac(env, initial_collect_steps=4, reproduce_locomotion=locomotion)
        assert alg._random_initial_collect is locomotion  # uniform actions until training
        alg.train_iter()
        experience, _ = alg.learner.replay_buffer.get_batch(8, 3, time_major=True)
        (inputs,) = _actor_inputs_with_grad(alg, experience)
        obs = experience.time_step.observation
        rows = flat_rows(obs, 1, None) if locomotion else flat_rows(obs, None, -1)
        assert torch.equal(inputs, rows)
    finally:
        env.close()


def test_reproduce_locomotion_with_discrete_actions_is_refused():
    env = counting_env(num_envs=1)
    try:
        with pytest.raises(ValueError, match="^SacAlgorithm.reproduce_locomotion is for contin"):
            _sac(env, reproduce_locomotion=True)
    finally:
        env.close()
