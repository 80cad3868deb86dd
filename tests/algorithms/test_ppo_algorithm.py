"""PPO: learning a tiny env with a known optimum, determinism, save/load, the loss."""

import torch

import alf.summary
from alf.algorithms.actor_critic_algorithm import ActorCriticInfo
from alf.algorithms.config import TrainerConfig
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.data_structures import StepType
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import (
    COUNTING_OPTIMUM,
    counting_env,
    evaluate,
    make_algorithm,
    parameters_of,
)


def _config(**kwargs):
    args = dict(
        unroll_length=10,
        mini_batch_size=20,
        mini_batch_length=1,
        num_updates_per_train_iter=4,
        replay_buffer_length=10,
        whole_replay_buffer_training=True,
        clear_replay_buffer=True,
    )
    args.update(kwargs)
    return TrainerConfig(**args)


def _train(seed, num_iterations, **kwargs):
    seeding.set_random_seed(seed)
    env = counting_env(num_envs=4, seed=seed)
    alg = make_algorithm(PPOAlgorithm, env, _config(), loss=PPOLoss(gamma=0.9), **kwargs)
    for _ in range(num_iterations):
        alg.train_iter()
    return alg, env


def test_ppo_learns_counting_env_optimum():
    alg, env = _train(seed=1, num_iterations=40)
    eval_env = counting_env(num_envs=2, seed=7)
    try:
        assert evaluate(alg, eval_env) == COUNTING_OPTIMUM
        assert alg.metrics.average_return > 0.8 * COUNTING_OPTIMUM
    finally:
        env.close()
        eval_env.close()


def test_ppo_same_seed_same_parameters_different_seed_different():
    a, env_a = _train(seed=3, num_iterations=3)
    b, env_b = _train(seed=3, num_iterations=3)
    c, env_c = _train(seed=4, num_iterations=3)
    pa, pb, pc = parameters_of(a), parameters_of(b), parameters_of(c)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert any(not torch.equal(pa[k], pc[k]) for k in pa)
    for env in (env_a, env_b, env_c):
        env.close()


def test_ppo_checkpoint_round_trip_gives_identical_outputs():
    a, env = _train(seed=5, num_iterations=3)
    state = a.state_dict()
    assert any(k.startswith("_optimizers.") for k in state)
    seeding.set_random_seed(99)
    b = make_algorithm(PPOAlgorithm, env, _config(), loss=PPOLoss(gamma=0.9))
    b.load_state_dict(state)
    obs = torch.arange(6, dtype=torch.float32).reshape(6, 1)
    from alf.data_structures import TimeStep

    ts = TimeStep(step_type=torch.ones(6, dtype=torch.int32), observation=obs)
    state0 = a.get_initial_predict_state(6)
    assert torch.equal(a.predict_step(ts, state0).output, b.predict_step(ts, state0).output)
    dist_a, _ = a.actor_network(obs)
    dist_b, _ = b.actor_network(obs)
    assert torch.equal(dist_a.logits, dist_b.logits)
    opt_a = a.optimizers()[0][1].state_dict()["state"]
    opt_b = b.optimizers()[0][1].state_dict()["state"]
    assert all(torch.equal(opt_a[i]["exp_avg"], opt_b[i]["exp_avg"]) for i in opt_a)
    env.close()


class _NullWriter:
    def add_scalar(self, *args, **kwargs):
        pass


def test_ppo_loss_clips_ratio_by_hand():
    """With advantage +1 the clipped objective stops rewarding ratio > 1 + eps."""
    loss_fn = PPOLoss(normalize_advantages=False, importance_ratio_clipping=0.2, td_loss_weight=0.0)
    log_prob = torch.log(torch.tensor([[1.5, 0.5, 1.1]]))
    info = ActorCriticInfo(
        step_type=torch.full((1, 3), StepType.MID),
        log_prob=log_prob,
        rollout_log_prob=torch.zeros(1, 3),
        entropy=torch.zeros(1, 3),
        value=torch.zeros(1, 3),
        rollout_value=torch.zeros(1, 3),
        advantages=torch.tensor([[1.0, -1.0, 1.0]]),
        returns=torch.zeros(1, 3),
    )
    loss_without_summaries = loss_fn(info)
    assert loss_without_summaries.extra.clip_fraction == ()  # diagnostics only when recorded
    alf.summary.set_default_writer(_NullWriter())
    try:
        with alf.summary.record_if(True):
            loss = loss_fn(info)
    finally:
        alf.summary.set_default_writer(None)
    assert torch.equal(loss.loss, loss_without_summaries.loss)
    # ratio 1.5, A=+1 -> max(-1.5, -1.2) = -1.2; ratio 0.5, A=-1 -> max(0.5, 0.8) = 0.8;
    # ratio 1.1, A=+1 -> max(-1.1, -1.1) = -1.1
    assert torch.allclose(loss.loss, torch.tensor([[-1.2, 0.8, -1.1]]), atol=1e-6)
    assert abs(float(loss.extra.clip_fraction) - 2 / 3) < 1e-6
    expected_kl = ((torch.tensor([1.5, 0.5, 1.1]) - 1) - log_prob[0]).mean()
    assert torch.allclose(loss.extra.approx_kl, expected_kl, atol=1e-6)


def test_ppo_kl_early_stop_limits_updates():
    seeding.set_random_seed(0)
    env = counting_env(num_envs=4, seed=0)
    cfg = _config(num_updates_per_train_iter=50, mini_batch_size=5)
    alg = make_algorithm(PPOAlgorithm, env, cfg, lr=0.05, loss=PPOLoss(gamma=0.9), target_kl=1e-4)
    alg.train_iter()
    assert alg._stop_epochs
    assert alg._num_updates_this_iter < 50 * 8
    env.close()


def test_ppo_requires_whole_buffer_config():
    env = counting_env(num_envs=1)
    try:
        import pytest

        with pytest.raises(ValueError, match="clear_replay_buffer"):
            make_algorithm(PPOAlgorithm, env, _config(clear_replay_buffer=False))
    finally:
        env.close()
