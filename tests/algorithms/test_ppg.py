"""PPG: the auxiliary loss and value targets by hand, the phase schedule (counted gradient
steps), the auxiliary phase's effect (policy kept, auxiliary value fitted), the network's
two architectures, checkpoints, determinism, refused settings, and learning CartPole."""

import functools
import math

import pytest
import torch
import torch.distributions as td

import alf
from alf.algorithms.config import TrainerConfig
from alf.algorithms.ppg_algorithm import PPGAlgorithm, PPGAuxOptions
from alf.algorithms.ppg_aux_phase_loss import PPGAuxInfo, PPGAuxPhaseLoss, _kl
from alf.algorithms.ppo_loss import PPOLoss
from alf.data_structures import StepType, TimeStep
from alf.environments.utils import create_environment
from alf.networks.disjoint_policy_value_network import DisjointPolicyValueNetwork
from alf.networks.encoding_networks import EncodingNetwork
from alf.networks.rnn_networks import LSTMEncodingNetwork
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import seeding
from alf.utils.schedulers import update_progress
from tests.algorithms.algorithm_test_utils import counting_env, evaluate, parameters_of


def _config(**kwargs):
    args = dict(
        unroll_length=10, mini_batch_size=20, mini_batch_length=1, num_updates_per_train_iter=2
    )
    args.update(kwargs)
    return TrainerConfig(**args)


def _algorithm(env, aux_options, config=None, hidden=(16,), lr=1e-2, **kwargs):
    return PPGAlgorithm(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        env=env,
        config=config or _config(),
        aux_options=aux_options,
        encoding_network_ctor=functools.partial(EncodingNetwork, fc_layer_params=hidden),
        policy_optimizer=Adam(lr=lr),
        aux_optimizer=Adam(lr=lr),
        loss=PPOLoss(gamma=0.9),
        aux_loss=kwargs.pop("aux_loss", PPGAuxPhaseLoss(gamma=0.9)),
        **kwargs,
    )


def _trained(seed, num_iterations, aux_options, **kwargs):
    seeding.set_random_seed(seed)
    env = counting_env(num_envs=4, seed=seed)
    alg = _algorithm(env, aux_options, **kwargs)
    for _ in range(num_iterations):
        alg.train_iter()
    return alg, env


# -- the loss by hand ----------------------------------------------------------------


def test_aux_loss_is_value_loss_plus_aux_value_loss_plus_beta_kl_by_hand():
    log3 = math.log(3.0)
    old_logits = torch.tensor([[[0.0, 0.0], [log3, 0.0]]])  # probs (1/2, 1/2), (3/4, 1/4)
    new_logits = torch.tensor([[[log3, 0.0], [0.0, 0.0]]], requires_grad=True)
    info = PPGAuxInfo(
        value=torch.tensor([[0.5, 0.0]]),
        aux=torch.tensor([[2.0, -1.0]]),
        returns=torch.tensor([[1.0, -0.5]]),
        action_distribution=td.Categorical(logits=new_logits),
        old_action_distribution=td.Categorical(logits=old_logits),
    )
    loss = PPGAuxPhaseLoss(policy_kl_loss_weight=0.5)(info)
    # KL(old || new) = sum_a p_old(a) log(p_old(a) / p_new(a))
    kl = torch.tensor(
        [[0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25),
          0.75 * math.log(0.75 / 0.5) + 0.25 * math.log(0.25 / 0.5)]]
    )  # fmt: skip
    value_loss = torch.tensor([[(1.0 - 0.5) ** 2, (-0.5 - 0.0) ** 2]])
    aux_loss = torch.tensor([[(1.0 - 2.0) ** 2, (-0.5 + 1.0) ** 2]])
    assert torch.allclose(loss.extra.policy_kl_loss, kl, atol=1e-6)
    assert torch.allclose(loss.extra.td_loss_actual, value_loss)
    assert torch.allclose(loss.extra.td_loss_aux, aux_loss)
    assert torch.allclose(loss.loss, value_loss + aux_loss + 0.5 * kl, atol=1e-6)
    loss.loss.sum().backward()
    assert new_logits.grad is not None and new_logits.grad.abs().sum() > 0


def test_value_targets_are_gae_lambda_returns_by_hand():
    loss = PPGAuxPhaseLoss(gamma=0.9, td_lambda=0.5)
    reward = torch.tensor([[0.0], [1.0], [2.0]])  # row t: the reward of the action at t-1
    value = torch.tensor([[0.5], [1.0], [2.0]])
    mid = torch.full((3, 1), StepType.MID, dtype=torch.int32)
    # d0 = 1 + 0.9 * 1 - 0.5 = 1.4, d1 = 2 + 0.9 * 2 - 1 = 2.8; A1 = d1, A0 = d0 + 0.45 A1
    targets = loss.value_targets(reward, value, mid, torch.ones(3, 1))
    assert torch.allclose(targets, torch.tensor([[1.4 + 0.45 * 2.8 + 0.5], [2.8 + 1.0]]))
    # the episode ends at row 2 (discount 0): d1 = 2 - 1 = 1, no bootstrap from V2
    ended = mid.clone()
    ended[2] = StepType.LAST
    targets = loss.value_targets(reward, value, ended, torch.tensor([[1.0], [1.0], [0.0]]))
    assert torch.allclose(targets, torch.tensor([[1.4 + 0.45 * 1.0 + 0.5], [1.0 + 1.0]]))


def test_kl_without_closed_form_is_estimated_from_a_sample_of_the_old_policy():
    mixture = td.MixtureSameFamily(
        td.Categorical(logits=torch.zeros(3, 2)), td.Normal(torch.zeros(3, 2), torch.ones(3, 2))
    )
    with pytest.raises(NotImplementedError):
        td.kl_divergence(mixture, mixture)
    assert torch.equal(_kl(mixture, mixture), torch.zeros(3))


# -- the phases ----------------------------------------------------------------------


def test_aux_phase_runs_every_interval_with_its_epochs_and_minibatches():
    """4 envs x 10 steps per iteration, ``interval=3``: 3 * 4 * (10 / 5) = 24 sequences of
    5 steps per phase, minibatches of 8 sequences: 3 per epoch, 2 epochs."""
    options = PPGAuxOptions(
        interval=3, mini_batch_length=5, mini_batch_size=8, num_updates_per_train_iter=2
    )
    seeding.set_random_seed(0)
    env = counting_env(num_envs=4, seed=0)
    alg = _algorithm(env, options)
    steps = []
    updater = alg._aux_updater
    update = updater.update_with_gradient

    def counted(loss_info, valid_masks=None, **kwargs):
        steps.append(tuple(loss_info.loss.shape))
        return update(loss_info, valid_masks, **kwargs)

    updater.update_with_gradient = counted
    phases, policy_updates = [], []
    for _ in range(7):
        alg.train_iter()
        phases.append(alg.num_aux_phases)
        policy_updates.append(alg._num_updates_this_iter)
    env.close()
    assert phases == [0, 0, 1, 1, 1, 2, 2]
    assert steps == [(5 * 8,)] * 12 and alg.num_aux_updates == 12
    assert policy_updates == [2 * 2] * 7  # 40 steps in minibatches of 20, 2 epochs
    assert len(alg._aux_buffer) == 1  # iteration 7, kept for the next phase


def _around_one_aux_phase(policy_kl_loss_weight):
    """``(KL(π_before || π_after), aux error before, after, value error before, after)``
    over the valid states of one auxiliary phase (after 4 iterations), the errors being
    mean squared differences to the value targets."""
    options = PPGAuxOptions(interval=4, mini_batch_size=4, num_updates_per_train_iter=32)
    seeding.set_random_seed(2)
    env = counting_env(num_envs=4, seed=2)
    aux_loss = PPGAuxPhaseLoss(gamma=0.9, policy_kl_loss_weight=policy_kl_loss_weight)
    alg = _algorithm(env, options, aux_loss=aux_loss)
    measured = []
    phase = alg._aux_phase

    def measured_phase():
        data = alg._aux_buffer

        def kept(get):
            return torch.cat([get(c) for c in data], 1).flatten(0, 1)

        obs = kept(lambda c: c.time_step.observation)
        returns = kept(lambda c: c.rollout_info.returns)
        step_type = kept(lambda c: c.time_step.step_type)
        valid = step_type != StepType.LAST
        with torch.no_grad():
            (before, value_before, aux_before), _ = alg.network(obs)
            phase()
            (after, value_after, aux_after), _ = alg.network(obs)

        def error(x):
            return float(((x - returns)[valid] ** 2).mean())

        kl = float(td.kl_divergence(before, after)[valid].mean())
        measured.extend([kl, error(aux_before), error(aux_after)])
        measured.extend([error(value_before), error(value_after)])

    alg._aux_phase = measured_phase
    for _ in range(4):
        alg.train_iter()
    env.close()
    assert alg.num_aux_phases == 1
    return measured


def test_aux_phase_keeps_the_policy_and_fits_the_aux_value():
    """One auxiliary phase (128 updates at lr 0.01): the policy barely moves (measured KL
    4e-5) while the auxiliary head's error falls by 40% (14.8 -> 8.7) and the value
    network's too (13.7 -> 7.4); without the KL term the policy moves 200 times as
    much (KL 7e-3)."""
    kl, aux_before, aux_after, value_before, value_after = _around_one_aux_phase(1.0)
    assert kl < 1e-3
    assert aux_after < 0.7 * aux_before, (aux_before, aux_after)
    assert value_after < 0.7 * value_before, (value_before, value_after)
    unclamped_kl = _around_one_aux_phase(0.0)[0]
    assert unclamped_kl > 10 * kl, (unclamped_kl, kl)


def test_disabled_aux_phase_is_ppo_on_the_disjoint_network():
    alg, env = _trained(0, 3, PPGAuxOptions(enabled=False, interval=1))
    env.close()
    assert alg.num_aux_phases == 0 and alg._aux_updater is None
    assert not any(k.startswith("_aux_optimizers.") for k in alg.state_dict())


# -- checkpoints and determinism ------------------------------------------------------


def test_checkpoint_round_trip_gives_identical_outputs_and_optimizer_states():
    options = PPGAuxOptions(interval=2, mini_batch_size=4, num_updates_per_train_iter=1)
    a, env = _trained(5, 4, options)
    state = a.state_dict()
    assert {"_optimizers.0", "_aux_optimizers.0"} <= set(state)
    assert not any(k.startswith(("_actor_network", "_value_network")) for k in state)
    seeding.set_random_seed(99)
    b = _algorithm(env, options)
    b.load_state_dict(state)
    obs = torch.arange(6, dtype=torch.float32).reshape(6, 1)
    (dist_a, value_a, aux_a), _ = a.network(obs)
    (dist_b, value_b, aux_b), _ = b.network(obs)
    assert torch.equal(dist_a.logits, dist_b.logits)
    assert torch.equal(value_a, value_b) and torch.equal(aux_a, aux_b)
    ts = TimeStep(step_type=torch.ones(6, dtype=torch.int32), observation=obs)
    s0 = a.get_initial_predict_state(6)
    assert torch.equal(a.predict_step(ts, s0).output, b.predict_step(ts, s0).output)
    for x, y in ((a._aux_updater, b._aux_updater), (a, b)):
        opt_x, opt_y = (o.optimizers()[0][1].state_dict()["state"] for o in (x, y))
        assert opt_x and all(torch.equal(opt_x[i]["exp_avg"], opt_y[i]["exp_avg"]) for i in opt_x)
    env.close()


def test_same_seed_same_parameters_different_seed_different():
    options = PPGAuxOptions(interval=2, mini_batch_size=4, num_updates_per_train_iter=2)
    runs = [_trained(seed, 4, options) for seed in (3, 3, 4)]
    pa, pb, pc = (parameters_of(alg) for alg, _ in runs)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert any(not torch.equal(pa[k], pc[k]) for k in pa)
    for _, env in runs:
        env.close()


# -- the network ---------------------------------------------------------------------


def _network(is_sharing_encoder, action_spec=None):
    seeding.set_random_seed(0)
    return DisjointPolicyValueNetwork(
        TensorSpec((4,)),
        action_spec or BoundedTensorSpec((), torch.int64, 0, 2),
        encoding_network_ctor=functools.partial(EncodingNetwork, fc_layer_params=(8,)),
        is_sharing_encoder=is_sharing_encoder,
    )


@pytest.mark.parametrize("shared", [False, True])
def test_network_heads_and_which_losses_reach_the_encoders(shared):
    net = _network(shared)
    obs = torch.randn(5, 4)
    (dist, value, aux), state = net(obs)
    assert dist.logits.shape == (5, 3) and value.shape == aux.shape == (5,) and state == ()
    assert net(obs, require_aux=False)[0][2] == ()
    assert torch.equal(net.policy_network(obs)[0].logits, dist.logits)
    assert torch.equal(net.value_network(obs)[0], value)
    encoder = net._actor_encoder
    value.sum().backward()
    reached = [p.grad is not None for p in encoder.parameters()]
    # the value loss never reaches the policy encoder (shared: a stop-gradient)
    assert not any(reached)
    aux.sum().backward()
    assert all(p.grad is not None for p in encoder.parameters())
    num_encoders = 1 if shared else 2
    assert sum(isinstance(m, EncodingNetwork) for m in net.modules()) == num_encoders
    assert len(net.state_dict()) == len(list(net.parameters()))


def test_shared_encoder_configured_by_name_encodes_once_per_step_and_trains():
    """ALF's ``DisjointPolicyValueNetwork.is_sharing_encoder=True``: one encoder; the policy
    phase runs it once per step and per minibatch (the heads read its output); the
    auxiliary phase runs after 2 iterations."""
    alf.reset_configs()
    alf.config("DisjointPolicyValueNetwork", is_sharing_encoder=True)
    try:
        options = PPGAuxOptions(interval=2, mini_batch_size=4, num_updates_per_train_iter=1)
        seeding.set_random_seed(0)
        env = counting_env(num_envs=4, seed=0)
        alg = _algorithm(env, options)
        encoder = alg.network._actor_encoder
        calls = []
        encoder.register_forward_hook(lambda module, args, out: calls.append(args[0].shape[0]))
        for _ in range(2):
            alg.train_iter()
        env.close()
    finally:
        alf.reset_configs()
    assert alg.network.is_sharing_encoder and alg.num_aux_phases == 1
    # 10 unrolled steps and the bootstrap row of the 4 envs, then minibatches of 20 steps
    assert calls[:13] == [4] * 11 + [20, 20]
    assert sum(isinstance(m, EncodingNetwork) for m in alg.modules()) == 1


def test_network_with_a_nest_of_discrete_and_continuous_actions():
    spec = {
        "d": BoundedTensorSpec((), torch.int64, 0, 2),
        "c": BoundedTensorSpec((2,), minimum=-1.0, maximum=1.0),
    }
    (dist, _, _), _ = _network(True, spec)(torch.randn(5, 4))
    assert dist["d"].logits.shape == (5, 3) and dist["c"].sample().shape == (5, 2)
    info = PPGAuxInfo(
        value=torch.zeros(5),
        aux=torch.zeros(5),
        returns=torch.zeros(5),
        action_distribution=dist,
        old_action_distribution=dist,
    )
    assert torch.allclose(PPGAuxPhaseLoss()(info).loss, torch.zeros(5), atol=1e-6)


def test_bad_settings_are_one_line_errors_naming_them():
    env = counting_env(num_envs=2, seed=0)
    lstm = functools.partial(LSTMEncodingNetwork, hidden_size=(4,))
    cases = [
        (dict(aux_options=PPGAuxOptions(interval=0)), "aux_options.interval must be an int >= 1"),
        (dict(aux_options=PPGAuxOptions(mini_batch_length=3)), "mini_batch_length (3) must divide"),
        (dict(aux_options=PPGAuxOptions(num_updates_per_train_iter=0)), "num_updates_per_train"),
        (dict(aux_options=(1, 2)), "aux_options must be a PPGAuxOptions"),
        (dict(encoding_network_ctor=lstm), "encoding_network_ctor must build a feed-forward"),
        (dict(policy_optimizer=None), "aux_optimizer: give aux_optimizer or policy_optimizer"),
    ]
    for kwargs, message in cases:
        args = dict(aux_options=PPGAuxOptions(), policy_optimizer=Adam(lr=1e-3))
        args.update(kwargs)
        with pytest.raises(ValueError) as error:
            PPGAlgorithm(env.observation_spec(), env.action_spec(), config=_config(), **args)
        assert message in str(error.value) and "\n" not in str(error.value), error.value
    env.close()


# -- learning --------------------------------------------------------------------------


def _cart_pole_run(seed, num_iterations, decay_lr: bool = False):
    """PPG on CartPole for ``num_iterations``; ``decay_lr``: both learning rates decay
    linearly to 0 over the run (the progress is given to the schedules here, as the
    trainer gives it), so the last policy is the settled one."""
    seeding.set_random_seed(seed)
    lr = [(0, 2e-3), (1, 0.0)] if decay_lr else 2e-3
    env = create_environment(
        env_name="CartPole-v1", num_parallel_environments=8, nonparallel=True, seed=seed
    )
    config = TrainerConfig(
        unroll_length=32, mini_batch_length=1, mini_batch_size=256, num_updates_per_train_iter=10
    )
    alg = PPGAlgorithm(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        env=env,
        config=config,
        aux_options=PPGAuxOptions(interval=4, mini_batch_size=8, num_updates_per_train_iter=3),
        encoding_network_ctor=functools.partial(
            EncodingNetwork, fc_layer_params=(64, 64), activation=torch.tanh
        ),
        policy_optimizer=Adam(lr=lr),
        aux_optimizer=Adam(lr=lr),
        loss=PPOLoss(gamma=0.98, td_lambda=0.8, td_loss_weight=0.5),
        aux_loss=PPGAuxPhaseLoss(gamma=0.98, td_lambda=0.8),
    )
    try:
        for i in range(num_iterations):
            update_progress(i, i * 256, i / num_iterations)
            alg.train_iter()
    finally:
        update_progress(0, 0, 0.0)
    eval_env = create_environment(
        env_name="CartPole-v1", num_parallel_environments=4, nonparallel=True, seed=seed + 100
    )
    try:
        return alg, evaluate(alg, eval_env, num_episodes=8)
    finally:
        env.close()
        eval_env.close()


def test_ppg_learns_cart_pole():
    """200 iterations, 51,200 env steps, the learning rates decaying to 0 (about 7 s on one
    core): the deterministic policy scores 500 on seeds 0-2 with this CPU's kernels and
    AVX2's, 464 / 490 / 500 with the x86-64 baseline's; a random policy scores about 22.
    (At 120 iterations and a constant rate the last policy still wobbles: 242 on seed 0
    with the baseline kernels.)"""
    alg, score = _cart_pole_run(seed=0, num_iterations=200, decay_lr=True)
    assert alg.num_aux_phases == 50
    assert score >= 400, score


@pytest.mark.slow
def test_ppg_solves_cart_pole_over_seeds():
    """Three seeds, 250 iterations (64,000 env steps) each, about 35 s: measured 500, 449,
    500 (a constant learning rate: CartPole's policy still wobbles at the end)."""
    scores = sorted(_cart_pole_run(seed=seed, num_iterations=250)[1] for seed in (1, 2, 3))
    assert scores[0] >= 400 and scores[1] >= 475, scores
