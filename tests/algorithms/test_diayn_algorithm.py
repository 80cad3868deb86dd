"""``DIAYNAlgorithm``: the reward ``log q(z|s) - log p(z)`` and the cross entropy by hand, the
continuous form, the ``Agent`` composing SAC + ``RandomCategoricalGoalGenerator`` + DIAYN
(checkpoint round trip, same seed same result), and DIAYN learning distinguishable skills
on ``PointMass-v0``."""

from __future__ import annotations

import functools
import io
import json
import math

import pytest
import torch

from alf.algorithms.agent import Agent
from alf.algorithms.agent_algorithm import AgentAlgorithm, AgentInfo
from alf.algorithms.config import TrainerConfig
from alf.algorithms.diayn_algorithm import (
    DIAYNAlgorithm,
    DIAYNInfo,
    create_discrete_skill_spec,
)
from alf.algorithms.goal_generator import GoalInfo, RandomCategoricalGoalGenerator
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork
from alf.algorithms.td_loss import OneStepTDLoss
from alf.data_structures import StepType, TimeStep
from alf.environments import suite_gym
from alf.environments.utils import create_environment
from alf.examples.diayn_skills import play_skills, skill_accuracy
from alf.networks.critic_networks import CriticNetwork
from alf.networks.encoding_networks import EncodingNetwork
from alf.optimizers import Adam
from alf.tensor_specs import TensorSpec
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import parameters_of

POINT_MASS = "alf.environments.point_mass_env:PointMass-v0"


@pytest.fixture(autouse=True)
def _one_torch_thread():
    num_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(num_threads)


# -- the discriminator by hand ------------------------------------------------------------

W = [[1.0, -2.0], [0.5, 0.0], [-1.0, 1.0]]
B = [0.1, -0.2, 0.3]
STATES = [[0.5, 1.0], [-1.0, 2.0], [2.0, 0.0], [0.0, -1.0]]
SKILLS = [2, 0, 1, 1]
STEP_TYPES = [StepType.MID, StepType.LAST, StepType.FIRST, StepType.MID]


def _hand_discriminator(**kwargs) -> DIAYNAlgorithm:
    """3 skills, a linear discriminator ``logits = W s + b`` (no hidden layer, no
    observation normalization: the encoding network is the identity on ``[2]``)."""
    alg = DIAYNAlgorithm(
        skill_spec=create_discrete_skill_spec(3),
        encoding_net=EncodingNetwork(TensorSpec((2,))),
        **kwargs,
    )
    (layer,) = alg._discriminator_net._fc_layers
    with torch.no_grad():
        layer._weight.copy_(torch.tensor(W))
        layer._bias.copy_(torch.tensor(B))
    return alg


def _hand_batch() -> TimeStep:
    skills = torch.nn.functional.one_hot(torch.tensor(SKILLS), 3).float()
    return TimeStep(
        step_type=torch.tensor(STEP_TYPES, dtype=torch.int32),
        observation=[torch.tensor(STATES), skills],
    )


def _hand_log_q() -> list[float]:
    """``log q(z_i|s_i)`` of each row, expanded: ``l_z - log sum_k exp(l_k)``."""
    out = []
    for s, z in zip(STATES, SKILLS):
        logits = [w[0] * s[0] + w[1] * s[1] + b for w, b in zip(W, B)]
        out.append(logits[z] - math.log(sum(math.exp(v) for v in logits)))
    return out


def test_reward_is_log_q_minus_log_p_and_zero_at_first():
    alg = _hand_discriminator()
    step = alg.rollout_step(_hand_batch(), ())
    log_q = _hand_log_q()
    # row 2 is FIRST: its state was reached by no action of its skill
    expected = [log_q[0] + math.log(3), log_q[1] + math.log(3), 0.0, log_q[3] + math.log(3)]
    assert torch.allclose(step.output, torch.tensor(expected), atol=1e-6)
    assert torch.equal(step.info.reward, step.output)
    # row 0's: logits (-1.4, 0.05, 0.8), z = 2
    row0 = 0.8 - math.log(math.exp(-1.4) + math.exp(0.05) + math.exp(0.8)) + math.log(3)
    assert math.isclose(expected[0], row0, abs_tol=1e-6)
    assert step.info.skill.tolist() == SKILLS


def test_reward_of_replayed_rows_is_the_discriminator_of_now_or_the_recorded_one():
    batch = _hand_batch()
    rows = TimeStep(
        step_type=batch.step_type.reshape(2, 2),
        observation=batch.observation[0].reshape(2, 2, 2),  # the env's observation
    )
    log_q = _hand_log_q()
    expected = torch.tensor([log_q[0], log_q[1], -math.log(3), log_q[3]]) + math.log(3)
    expected[2] = 0.0  # FIRST
    now = _hand_discriminator()
    recorded = now.rollout_step(batch, ()).info
    recorded = DIAYNInfo(reward=torch.full((2, 2), 7.0), skill=recorded.skill.reshape(2, 2))
    # the paper's: computed when trained on, by the discriminator of then (unnormalized)
    assert torch.allclose(now.intrinsic_reward(rows, recorded), expected.reshape(2, 2), atol=1e-6)
    (layer,) = now._discriminator_net._fc_layers
    with torch.no_grad():
        layer._weight.zero_()
        layer._bias.zero_()  # q = 1/3 for every skill: no reward
    assert torch.equal(now.intrinsic_reward(rows, recorded), torch.zeros(2, 2))
    # ALF's: the reward recorded at rollout
    old = _hand_discriminator(recompute_reward=False)
    assert torch.equal(old.intrinsic_reward(rows, recorded), recorded.reward)


def test_loss_is_the_cross_entropy_averaged_over_every_row():
    alg = _hand_discriminator()
    info = alg.train_step(_hand_batch(), (), ()).info
    log_q = _hand_log_q()
    expected = [-log_q[0], -log_q[1], 0.0, -log_q[3]]
    assert torch.allclose(info.loss, torch.tensor(expected), atol=1e-6)
    loss = alg.calc_loss(info)
    assert torch.allclose(loss.loss.mean(), torch.tensor(sum(expected) / 4), atol=1e-6)
    # most likely skills: row 0 -> 2 (right), row 1 -> 2 (wrong: 0), row 3 -> 0 (wrong: 1)
    assert math.isclose(float(loss.extra["accuracy"]), 1 / 3, abs_tol=1e-6)
    loss.loss.mean().backward()
    (layer,) = alg._discriminator_net._fc_layers
    assert layer._weight.grad.abs().sum() > 0


def test_reward_normalization_when_asked():
    alg = _hand_discriminator(reward_adapt_speed=8.0, recompute_reward=False)
    reward = torch.tensor([[1.0, 3.0], [5.0, 7.0]])
    out = alg.intrinsic_reward(TimeStep(), DIAYNInfo(reward=reward))
    assert abs(float(out.mean())) < 1e-5
    assert math.isclose(float(out.std(unbiased=False)), 1.0, rel_tol=1e-4)


def test_continuous_skills_use_the_squared_error():
    identity = EncodingNetwork(TensorSpec((2,)))
    alg = DIAYNAlgorithm(skill_spec=TensorSpec((2,)), encoding_net=identity)
    (layer,) = alg._discriminator_net._fc_layers
    with torch.no_grad():
        layer._weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))
        layer._bias.zero_()
    ts = TimeStep(
        step_type=torch.tensor([StepType.MID, StepType.FIRST], dtype=torch.int32),
        observation=[torch.tensor([[1.0, 1.0], [3.0, 3.0]]), torch.tensor([[0.5, -1.0]] * 2)],
    )
    # prediction (1, 2) against z = (0.5, -1): 0.25 + 9
    assert torch.allclose(alg.rollout_step(ts, ()).output, torch.tensor([-9.25, 0.0]))
    assert torch.allclose(alg.train_step(ts, (), ()).info.loss, torch.tensor([9.25, 0.0]))
    assert alg.num_of_skills is None


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(ValueError, match="DIAYNAlgorithm.skill_spec: expected a TensorSpec"):
        DIAYNAlgorithm(skill_spec=4, observation_spec=TensorSpec((2,)))
    with pytest.raises(ValueError, match="DIAYNAlgorithm.skill_spec: a continuous skill spec"):
        DIAYNAlgorithm(skill_spec=TensorSpec((2, 2)), observation_spec=TensorSpec((2,)))
    with pytest.raises(ValueError, match="DIAYNAlgorithm.skill_spec: needs at least 2 skills"):
        DIAYNAlgorithm(skill_spec=create_discrete_skill_spec(1), observation_spec=TensorSpec((2,)))
    with pytest.raises(ValueError, match="encoding_net or observation_spec must be given"):
        DIAYNAlgorithm(skill_spec=create_discrete_skill_spec(3))


# -- the agent -------------------------------------------------------------------------------


def _env(num_envs=4, seed=0):
    return create_environment(
        env_name=POINT_MASS,
        env_load_fn=suite_gym.load,
        num_parallel_environments=num_envs,
        nonparallel=True,
        seed=seed,
    )


def _diayn_agent(env, num_of_skills=4, hidden=(64, 64), lr=1e-3, **config):
    """SAC + ``RandomCategoricalGoalGenerator`` + DIAYN, both parts given as ctors, the
    extrinsic reward off (the env pays none anyway)."""
    args = dict(
        unroll_length=1,
        mini_batch_length=2,
        mini_batch_size=128,
        num_updates_per_train_iter=1,
        whole_replay_buffer_training=False,
        clear_replay_buffer=False,
        replay_buffer_length=20_000,
        initial_collect_steps=200,
    )
    args.update(config)
    rl = functools.partial(
        SacAlgorithm,
        actor_network_ctor=functools.partial(SquashedNormalActorNetwork, fc_layer_params=hidden),
        critic_network_ctor=functools.partial(CriticNetwork, joint_fc_layer_params=hidden),
        critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=0.9),
        target_update_tau=0.01,
        actor_optimizer=Adam(lr=lr),
        critic_optimizer=Adam(lr=lr),
        alpha_optimizer=Adam(lr=lr),
    )
    return Agent(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=TrainerConfig(**args),
        rl_algorithm_cls=rl,
        goal_generator=functools.partial(
            RandomCategoricalGoalGenerator, num_of_goals=num_of_skills
        ),
        intrinsic_reward_module=functools.partial(
            DIAYNAlgorithm,
            skill_spec=create_discrete_skill_spec(num_of_skills),
            hidden_size=hidden,
            optimizer=Adam(lr=lr),
        ),
        extrinsic_reward_coef=0.0,
    )


def _short_run(seed):
    seeding.set_random_seed(seed)
    env = _env(num_envs=2, seed=seed)
    agent = _diayn_agent(env, hidden=(16,), initial_collect_steps=4, mini_batch_size=8)
    for _ in range(6):
        agent.train_iter()
    return agent, env


def test_agent_composes_sac_goal_generator_and_diayn():
    env = _env(num_envs=2)
    try:
        agent = _diayn_agent(env, num_of_skills=3)
        assert isinstance(agent, AgentAlgorithm)
        diayn = agent.intrinsic_reward_module
        assert diayn.num_of_skills == 3
        # built with [observation, goal]: the discriminator reads the position only
        assert diayn._discriminator_net.input_tensor_spec == TensorSpec((2,))
        assert diayn._observation_normalizer is not None
        # the RL algorithm is trained on the intrinsic reward alone, of the discriminator
        # of now (the recorded reward is not used)
        positions = torch.tensor([[[0.3, -0.2], [-0.9, 0.5]], [[0.1, 0.1], [0.7, 0.0]]])
        step_type = torch.full((2, 2), StepType.MID, dtype=torch.int32)
        ts = TimeStep(step_type=step_type, reward=torch.full((2, 2), 5.0), observation=positions)
        info = DIAYNInfo(reward=torch.full((2, 2), 9.0), skill=torch.tensor([[0, 1], [2, 0]]))
        goal = GoalInfo(goal=torch.nn.functional.one_hot(info.skill, 3).float())
        composed = agent.compose_reward(ts, AgentInfo(irm=info, goal_generator=goal))
        expected = diayn._reward(
            positions.flatten(0, 1), info.skill.flatten(), step_type.flatten()
        ).reshape(2, 2)
        assert torch.allclose(composed, expected) and not torch.equal(composed, info.reward)
    finally:
        env.close()


def test_agent_same_seed_same_result_and_checkpoint_round_trip():
    a, env_a = _short_run(3)
    b, env_b = _short_run(3)
    c, env_c = _short_run(4)
    try:
        pa, pb, pc = parameters_of(a), parameters_of(b), parameters_of(c)
        assert any("_irm._discriminator_net" in k for k in pa)
        # every part took gradient steps: SAC's actor, critics and alpha, the discriminator
        assert len(a.optimizers()) == 4
        assert all(opt.state_dict()["state"] for _, opt, _ in a.optimizers())
        assert all(torch.equal(pa[k], pb[k]) for k in pa)
        assert any(not torch.equal(pa[k], pc[k]) for k in pa)

        buffer = io.BytesIO()
        torch.save(a.state_dict(), buffer)
        buffer.seek(0)
        seeding.set_random_seed(99)
        fresh = _diayn_agent(env_c, hidden=(16,), initial_collect_steps=4, mini_batch_size=8)
        fresh.load_state_dict(torch.load(buffer, weights_only=True))
        pf = parameters_of(fresh)
        assert pf.keys() == pa.keys() and all(torch.equal(pa[k], pf[k]) for k in pa)
        positions = torch.tensor([[0.3, -0.2], [-0.9, 0.5], [0.0, 0.0]])
        skills = torch.eye(4)[[0, 3, 1]]
        ts = TimeStep(
            step_type=torch.full((3,), StepType.MID, dtype=torch.int32), observation=positions
        )
        state = a.get_initial_predict_state(3)
        state = state._replace(goal_generator=state.goal_generator._replace(goal=skills))
        assert torch.equal(a.predict_step(ts, state).output, fresh.predict_step(ts, state).output)
        da, df = a.intrinsic_reward_module, fresh.intrinsic_reward_module
        assert torch.equal(da.discriminate(positions), df.discriminate(positions))
        with_skill = ts._replace(observation=[positions, skills])
        reward_a = da.rollout_step(with_skill, ()).output
        assert torch.equal(reward_a, df.rollout_step(with_skill, ()).output)
    finally:
        for env in (env_a, env_b, env_c):
            env.close()


# -- learning ---------------------------------------------------------------------------------


def _learn(num_of_skills, iterations, seed=0, intrinsic_reward_coef=1.0):
    """Train on PointMass-v0; each skill's accuracy (its deterministic episode's states
    classified by the discriminator)."""
    seeding.set_random_seed(seed)
    env, eval_env = _env(num_envs=4, seed=seed), _env(num_envs=1, seed=seed)
    try:
        agent = _diayn_agent(env, num_of_skills=num_of_skills)
        agent._intrinsic_reward_coef = intrinsic_reward_coef
        for _ in range(iterations):
            agent.train_iter()
        return skill_accuracy(agent, play_skills(agent, eval_env))
    finally:
        env.close()
        eval_env.close()


def test_skills_become_distinguishable():
    """4 skills, 1,000 iterations (4,000 env steps, about 10 s): the discriminator tells the
    deterministic skills apart far above chance (1/4). Seeds 0, 1, 2 measured
    [1.0, 0.97, 0.87, 0.97], [1.0, 1.0, 0.9, 1.0], [0.93, 1.0, 0.83, 1.0]; with the intrinsic
    reward off (``intrinsic_reward_coef=0``) every state goes to one skill: [1, 0, 0, 0]
    (mean 0.25)."""
    accuracy = _learn(num_of_skills=4, iterations=1000)
    assert sum(accuracy) / 4 >= 0.75, accuracy
    assert sum(a >= 0.8 for a in accuracy) >= 3, accuracy


@pytest.mark.slow
def test_six_skills_are_learned_slow():
    """6 skills, 3,000 iterations (12,000 env steps, 30 s on an idle core): at least 4 skills are
    told apart with accuracy >= 0.9. Seed 0 measured [0.97, 1.0, 1.0, 1.0, 1.0, 1.0]."""
    accuracy = _learn(num_of_skills=6, iterations=3000)
    assert sum(a >= 0.9 for a in accuracy) >= 4, accuracy


def test_alf_style_diayn_gin_trains_and_checkpoints(tmp_path):
    """``tests/confs/alf_style/diayn_pendulum.gin`` (ALF's DIAYN Pendulum options: NestConcat,
    clipped_exp, NormalProjectionNetwork's, td_error_loss_fn, use_rollout_state) trains 30
    iterations with the intrinsic reward alone."""
    from tests.examples.test_alf_style_confs import _algorithm_state, _run, _scalars, _train

    root = tmp_path / "diayn"
    result = _train("diayn_pendulum.gin", root, flag="--gin_file")
    assert result.returncode == 0, result.stderr[-3000:]
    state = _algorithm_state(root, "ckpt-30.pt")
    # the discriminator reads Pendulum's 3-D observation; the actor [observation, skill]
    assert tuple(state["_irm._discriminator_net._fc_layers.0._weight"].shape) == (32, 3)
    assert tuple(state["_irm._discriminator_net._fc_layers.1._weight"].shape) == (5, 32)
    actor = [v for k, v in state.items() if k.startswith("_rl_algorithm._actor_network")]
    assert tuple(actor[0].shape) == (32, 3 + 5)
    intrinsic = _scalars(root / "train", "reward/intrinsic")
    overall = _scalars(root / "train", "reward/overall")
    assert intrinsic and intrinsic == overall
    assert _scalars(root / "train", "loss/DIAYNAlgorithm/accuracy")
    # alf/examples/diayn_skills.py plays each skill of the run and plots them
    png = tmp_path / "skills.png"
    args = ["alf.examples.diayn_skills", "--root_dir", str(root), "--png", str(png)]
    play = _run(*args, "--episodes", "1")
    assert play.returncode == 0, play.stderr[-3000:]
    result = json.loads(play.stdout.strip().splitlines()[-1])
    assert result["K"] == 5 and all(0.0 <= a <= 1.0 for a in result["accuracy"])
    assert png.stat().st_size > 0
