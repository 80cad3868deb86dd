"""The acting loop (``Unroller``) on stateless and recurrent policies, with and without a
data transformer, against step-by-step expected values on CountingEnv.

CountingEnv with ``terminate_at=3``: observations 0, 1, 2, 3 (LAST, terminated), then
the auto-reset FIRST with 0 again; the reward at step t is the action taken at t-1.
The probe policy's rollout action is ``obs % 4`` (its predict action is always 3),
and a recurrent probe carries a counter state ``s + 1`` (so after the reset at FIRST
the state a step was taken from is the step's index within its episode).
"""

from __future__ import annotations

import functools

import pytest
import torch

from alf.algorithms.config import TrainerConfig
from alf.algorithms.rl_algorithm import RLAlgorithm
from alf.data_structures import AlgStep, StepType
from alf.data_transformers import RewardScaling, SequentialDataTransformer
from alf.data_transformers.frame_stacker import FrameStacker
from alf.learners.unroller import AlgorithmPolicy, Unroller
from alf.metrics import EpisodeMetrics
from alf.tensor_specs import TensorSpec
from tests.algorithms.algorithm_test_utils import counting_env

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST
#: one env's first 10 steps: observation, step type, reward
OBS = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
STEP_TYPES = [F, M, M, L, F, M, M, L, F, M]
REWARDS = [0, 0, 1, 2, 0, 0, 1, 2, 0, 0]
#: the state a recurrent probe steps from: its step index in the episode
STATES = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]


class ProbeAlgorithm(RLAlgorithm):
    """Deterministic steps (see the module doc); rollout info echoes what it saw."""

    def __init__(self, env, recurrent: bool, transformer_ctor=None):
        transformer = None
        observation_spec = env.observation_spec()
        if transformer_ctor is not None:
            transformer = transformer_ctor(observation_spec=observation_spec)
            observation_spec = transformer.transformed_observation_spec
        state_spec = TensorSpec(()) if recurrent else ()
        super().__init__(
            observation_spec,
            env.action_spec(),
            train_state_spec=state_spec,
            env=env,
            config=TrainerConfig(),
        )
        if transformer is not None:
            self.set_data_transformer(transformer)
        self.recurrent = recurrent

    def _next_state(self, state):
        return state + 1 if self.recurrent else ()

    def rollout_step(self, inputs, state):
        last_obs = inputs.observation[:, -1]  # the newest frame when frames are stacked
        action = last_obs.long() % 4
        info = (inputs.observation.clone(), inputs.reward.clone())
        return AlgStep(output=action, state=self._next_state(state), info=info)

    def predict_step(self, inputs, state):
        action = torch.full(inputs.step_type.shape, 3, dtype=torch.int64)
        return AlgStep(output=action, state=self._next_state(state))


CASES = [
    pytest.param(False, None, id="stateless"),
    pytest.param(True, None, id="recurrent"),
    pytest.param(False, functools.partial(RewardScaling, scale=2.0), id="stateless-reward_scaling"),
    pytest.param(True, functools.partial(FrameStacker, stack_size=2), id="recurrent-frame_stacker"),
]


def _expected_observation(t: int, transformer_ctor) -> list:
    if transformer_ctor is not None and transformer_ctor.func is FrameStacker:
        previous = OBS[t] if STEP_TYPES[t] == F else OBS[t - 1]  # frame repeated at FIRST
        return [previous, OBS[t]]
    return [OBS[t]]


@pytest.mark.parametrize("recurrent, transformer_ctor", CASES)
def test_unroll_steps_the_env_with_the_policy(recurrent, transformer_ctor):
    env = counting_env(num_envs=2, terminate_at=3)
    try:
        alg = ProbeAlgorithm(env, recurrent, transformer_ctor)
        unroller = alg.unroller
        first = unroller.unroll(6, bootstrap=True)
        second = unroller.unroll(4)
    finally:
        env.close()
    experiences = first.experiences + second.experiences  # 10 consecutive steps
    scale = 2.0 if transformer_ctor is not None and transformer_ctor.func is RewardScaling else 1.0
    for t, exp in enumerate(experiences):
        ts = exp.time_step  # transformed, as the learner of an on-policy algorithm gets it
        assert ts.step_type.tolist() == [STEP_TYPES[t]] * 2, t
        assert ts.observation.tolist() == [_expected_observation(t, transformer_ctor)] * 2, t
        assert ts.reward.tolist() == [REWARDS[t] * scale] * 2, t
        assert exp.action.tolist() == [OBS[t] % 4] * 2, t
        assert torch.equal(exp.rollout_info[0], ts.observation)  # the policy saw that
        if recurrent:
            assert exp.state.tolist() == [STATES[t]] * 2, t
    # the bootstrap row is step 6, not taken: the second unroll starts from it
    assert first.num_env_steps == 12 and second.num_env_steps == 8
    assert torch.equal(first.bootstrap.time_step.observation, experiences[6].time_step.observation)
    assert torch.equal(first.bootstrap.action, experiences[6].action)
    if recurrent:
        assert torch.equal(first.bootstrap.state, experiences[6].state)
    # episodes 0-1-2-3 (return 0 + 1 + 2 = 3) ended at steps 3 and 7 in both envs
    metrics = unroller.metrics
    assert metrics.num_episodes == 4 and metrics.env_steps == 2 * 7
    assert float(metrics.average_return) == 3.0 and metrics.average_episode_length == 3.0


def test_raw_unroll_keeps_the_untransformed_steps_on_the_cpu():
    env = counting_env(num_envs=2, terminate_at=3)
    try:
        alg = ProbeAlgorithm(env, True, functools.partial(RewardScaling, scale=2.0))
        unroll = alg.unroller.unroll(4, raw=True, bootstrap=True)
    finally:
        env.close()
    for t, exp in enumerate(unroll.experiences):
        assert exp.time_step.reward.tolist() == [REWARDS[t]] * 2  # raw reward
        assert exp.rollout_info[1].tolist() == [2.0 * REWARDS[t]] * 2  # the policy saw 2x
        assert exp.state.tolist() == [STATES[t]] * 2
        assert exp.action.device.type == "cpu"
    assert unroll.bootstrap.time_step.observation.tolist() == [[0.0], [0.0]]  # step 4: FIRST


def test_prenormalize_counts_steps_and_restarts_the_episodes():
    env = counting_env(num_envs=2, terminate_at=3)
    try:
        alg = ProbeAlgorithm(env, True)
        assert alg.prenormalize(5) == 10
        # the 5 time steps acted on are F M M L F: 3 results of actions per env
        assert alg.metrics.num_episodes == 2 and alg.metrics.env_steps == 2 * 3
        first = alg.unroller.unroll(1).experiences[0]
    finally:
        env.close()
    assert first.time_step.step_type.tolist() == [F, F]  # fresh episodes
    assert first.state.tolist() == [0.0, 0.0]


def test_run_episodes_plays_the_predict_policy_until_enough_episodes_end():
    env = counting_env(num_envs=1, terminate_at=3)
    seen = []
    try:
        alg = ProbeAlgorithm(env, True)
        metrics = EpisodeMetrics(1, buffer_size=2)
        unroller = Unroller(AlgorithmPolicy(alg, "predict"), env, metrics)
        unroller.run_episodes(2, observe=lambda ts: seen.append(int(ts.step_type[0])))
    finally:
        env.close()
    # two whole episodes, the LAST of the second one seen and not acted on
    assert seen == [F, M, M, L, F, M, M, L]
    assert metrics.num_episodes == 2 and float(metrics.average_return) == 9.0  # 3 + 3 + 3


def test_run_episodes_stops_at_max_steps():
    env = counting_env(num_envs=1, terminate_at=None)
    try:
        unroller = Unroller(AlgorithmPolicy(ProbeAlgorithm(env, False), "predict"), env)
        metrics = unroller.run_episodes(1, max_steps=7)
    finally:
        env.close()
    # 7 actions taken; the metrics saw the time steps acted on, the first a FIRST
    assert metrics.num_episodes == 0 and metrics.env_steps == 6


def test_sequential_transformers_apply_in_order_in_the_loop():
    ctor = functools.partial(
        SequentialDataTransformer,
        data_transformer_ctors=[
            functools.partial(FrameStacker, stack_size=2),
            functools.partial(RewardScaling, scale=-1.0),
        ],
    )
    env = counting_env(num_envs=1, terminate_at=3)
    try:
        steps = ProbeAlgorithm(env, False, ctor).unroller.unroll(4).experiences
    finally:
        env.close()
    assert [exp.time_step.observation[0].tolist() for exp in steps] == [
        [0, 0],
        [0, 1],
        [1, 2],
        [2, 3],
    ]
    assert [float(exp.time_step.reward[0]) for exp in steps] == [0.0, -0.0, -1.0, -2.0]


def test_algorithm_policy_rejects_an_unknown_mode():
    env = counting_env(num_envs=1)
    try:
        with pytest.raises(ValueError, match="'train'"):
            AlgorithmPolicy(ProbeAlgorithm(env, False), "train")
    finally:
        env.close()


def test_an_algorithm_without_a_learner_says_why_it_cannot_train():
    env = counting_env(num_envs=1)
    try:
        with pytest.raises(RuntimeError, match="cannot train without a learner_class"):
            ProbeAlgorithm(env, False).train_iter()
    finally:
        env.close()
