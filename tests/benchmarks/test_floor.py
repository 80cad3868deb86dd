"""The hand-written floors compute what alf computes (GAE, advantage normalization, the
squashed Gaussian's log-probability, the confs' hyperparameters), and their phase split adds
up."""

import math
import os

import numpy as np
import pytest
import torch
import torch.distributions as td

import alf
from alf.algorithms.actor_critic_loss import normalize_advantages
from alf.algorithms.sac_algorithm import _sample_with_log_prob
from alf.data_structures import StepType
from alf.utils import common, dist_utils, value_ops
from alf.utils.schedulers import update_progress
from benchmarks import floor_ppo, floor_sac
from benchmarks.harness import phases
from benchmarks.tasks import TASKS

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST
REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_gae_matches_alf():
    # 3 envs, 6 rows: env 0 terminates at row 2 (discount 0), env 1 is cut by a time limit
    # at row 3 (discount 1), env 2 runs through; each LAST is followed by a FIRST (reward 0).
    step_types = np.array(
        [
            [MID, FIRST, MID],
            [MID, MID, MID],
            [LAST, MID, MID],
            [FIRST, LAST, MID],
            [MID, FIRST, MID],
            [MID, MID, MID],
        ]
    )
    discounts = np.where(step_types == LAST, [[0.0, 1.0, 1.0]], 1.0).astype(np.float32)
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=step_types.shape).astype(np.float32)
    rewards[step_types == FIRST] = 0.0
    values = rng.normal(size=step_types.shape).astype(np.float32)
    gamma, lam = 0.98, 0.8
    floor = floor_ppo.gae(rewards, values, step_types == LAST, discounts, gamma, lam)
    alf_adv = value_ops.generalized_advantage_estimation(
        torch.from_numpy(rewards),
        torch.from_numpy(values),
        torch.from_numpy(step_types),
        torch.from_numpy(discounts) * gamma,
        td_lambda=lam,
    )
    np.testing.assert_allclose(floor, alf_adv.numpy(), rtol=1e-5, atol=1e-6)
    assert floor[2, 0] == 0.0 and floor[3, 1] == 0.0  # LAST rows
    # The row before a time-limit LAST bootstraps from its value, before a terminal one not.
    assert floor[1, 0] == pytest.approx(rewards[2, 0] - values[1, 0], abs=1e-6)
    delta = rewards[3, 1] + gamma * values[3, 1] - values[2, 1]
    assert floor[2, 1] == pytest.approx(delta, abs=1e-6)


def test_advantage_normalization_matches_alf():
    advantages = torch.randn(256)
    valid = torch.rand(256) > 0.1
    np.testing.assert_allclose(
        floor_ppo.normalize(advantages, valid.float()),
        normalize_advantages(advantages, valid),
        rtol=1e-5,
        atol=1e-6,
    )


def test_squashed_gaussian_sample_and_log_prob_match_alf():
    actor = floor_sac.Actor(3, 1, (8, 8), (-20.0, 2.0), scale=2.0)
    obs = torch.randn(16, 3)
    mean, std = actor(obs)
    dist = td.TransformedDistribution(
        td.Independent(td.Normal(mean, std), 1),
        [dist_utils.StableTanh(), td.AffineTransform(torch.zeros(1), 2 * torch.ones(1))],
    )
    torch.manual_seed(0)
    action, log_prob = actor.sample(obs)
    torch.manual_seed(0)
    alf_action, alf_log_prob = _sample_with_log_prob(dist)
    torch.testing.assert_close(action, alf_action)
    torch.testing.assert_close(log_prob, alf_log_prob)


@pytest.fixture
def conf():
    """``conf(path)`` parses an example conf; the configs are reset afterwards."""

    def parse(path):
        alf.reset_configs()
        common.parse_conf_file(os.path.join(REPO_DIR, path), [], [])
        return alf.get_config_value

    yield parse
    alf.reset_configs()
    update_progress(0, 0, 0.0)


def test_floor_ppo_hyperparameters_are_the_confs(conf):
    value, hp = conf("alf/examples/ppo_cart_pole_conf.py"), floor_ppo.PPO
    assert value("create_environment.num_parallel_environments") == hp["num_envs"]
    assert value("create_environment.env_name") == hp["env_name"]
    for name, key in [
        ("unroll_length", "unroll_length"),
        ("num_updates_per_train_iter", "epochs"),
        ("mini_batch_size", "mini_batch_size"),
        ("num_env_steps", "env_steps"),
    ]:
        assert value(f"TrainerConfig.{name}") == hp[key]
    assert value("TrainerConfig.mini_batch_length") == 1
    assert value("TrainerConfig.data_transformer_ctor") is None  # no observation normalizer
    for name, key in [
        ("gamma", "gamma"),
        ("td_lambda", "gae_lambda"),
        ("td_loss_weight", "vf_coef"),
        ("entropy_regularization", "ent_coef"),
    ]:
        assert value(f"PPOLoss.{name}") == hp[key]
    assert value("PPOLoss.normalize_advantages") is True
    assert value("PPOLoss.importance_ratio_clipping") == [(0, hp["clip"]), (1, 0.0)]
    optimizer = value("PPOAlgorithm.optimizer")
    assert optimizer.gradient_clipping == hp["max_grad_norm"]
    assert optimizer.kwargs["eps"] == hp["adam_eps"]
    for progress in (0.0, 0.5):
        update_progress(0, 0, progress)
        assert optimizer.lr_scheduler() == pytest.approx(hp["lr"] * (1 - progress))
    for ctor in ("actor_network_ctor", "value_network_ctor"):
        keywords = value(f"PPOAlgorithm.{ctor}").keywords
        assert keywords["fc_layer_params"] == hp["hidden"]
        assert keywords["activation"] is torch.tanh
    actor = value("PPOAlgorithm.actor_network_ctor").keywords
    assert actor["discrete_projection_net_ctor"].keywords["logits_init_output_factor"] == 0.01


def test_floor_sac_hyperparameters_are_the_confs(conf):
    value, hp = conf("alf/examples/sac_pendulum_conf.py"), floor_sac.SAC
    assert value("create_environment.env_name") == hp["env_name"]
    assert value("create_environment.num_parallel_environments") == 1
    assert value("TrainerConfig.mini_batch_size") == hp["batch_size"]
    assert value("TrainerConfig.mini_batch_length") == 2
    assert value("TrainerConfig.unroll_length") == 1
    assert value("TrainerConfig.num_updates_per_train_iter") == 1
    assert value("TrainerConfig.replay_buffer_length") == hp["buffer_size"]
    assert value("TrainerConfig.initial_collect_steps") == hp["learning_starts"]
    assert value("TrainerConfig.num_env_steps") == hp["env_steps"]
    assert TASKS["sac_pendulum"].learning_starts == hp["learning_starts"]
    for name in ("actor_optimizer", "critic_optimizer", "alpha_optimizer"):
        assert value(f"SacAlgorithm.{name}").lr_scheduler() == hp["lr"]
    assert value("SacAlgorithm.critic_loss_ctor").keywords["gamma"] == hp["gamma"]
    assert value("SacAlgorithm.target_update_tau") == hp["tau"]
    assert value("SacAlgorithm.target_update_period") == 1
    assert value("SacAlgorithm.initial_log_alpha") == hp["initial_log_alpha"]
    assert value("SacAlgorithm.num_critic_replicas") == 2
    assert value("SacAlgorithm.random_initial_collect") is False  # the untrained policy
    assert value("SacAlgorithm.actor_network_ctor").keywords["fc_layer_params"] == hp["hidden"]
    critic = value("SacAlgorithm.critic_network_ctor").keywords
    assert critic["joint_fc_layer_params"] == hp["hidden"]
    assert critic["activation"] is torch.relu_


def test_phase_clock_charges_nested_time_once(monkeypatch):
    now = iter(range(100))
    monkeypatch.setattr(phases.time, "perf_counter", lambda: float(next(now)))
    clock = phases.PhaseClock()
    clock.enter("bookkeeping")  # 0
    clock.enter("update")  # 1
    clock.enter("rollout")  # 2
    clock.enter("bookkeeping")  # 3
    clock.exit()  # 4
    clock.exit()  # 5
    clock.exit()  # 6
    clock.enter("rollout")  # 7
    clock.exit()  # 8
    clock.exit()  # 9
    assert clock.totals == dict(bookkeeping=4.0, update=2.0, rollout=3.0)
    assert sum(clock.totals.values()) == 9.0
    clock.reset()  # 10
    clock.enter("update")  # 11
    clock.exit()  # 12
    assert clock.totals == dict(bookkeeping=0.0, update=1.0, rollout=0.0)


def _check_record(record, env_steps, timed_env_steps):
    assert record["env_steps"] == env_steps and record["timed_env_steps"] == timed_env_steps
    total = sum(record[f"{p}_s"] for p in phases.PHASES)
    assert record["timed_s"] == pytest.approx(total)
    assert record["rollout_s"] > 0 and record["update_s"] > 0 and record["bookkeeping_s"] >= 0
    assert record["us_per_step"] == pytest.approx(1e6 * total / timed_env_steps)
    assert record["steps_per_s"] == pytest.approx(timed_env_steps / total)
    shares = sum(record[f"{p}_share"] for p in phases.PHASES)
    assert shares == pytest.approx(1.0) and record["cpu_s"] > 0


def test_floors_report_their_phase_split():
    ppo = floor_ppo.run(env_steps=768, warmup_steps=256)
    _check_record(ppo, 768, 512)
    assert math.isfinite(ppo["final_train_return"])  # 768 steps of CartPole: episodes ended
    sac = floor_sac.run(env_steps=120, warmup_steps=110)
    _check_record(sac, 120, 10)
    assert ppo["framework"] == sac["framework"] == "floor"
