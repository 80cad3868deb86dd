"""Data transformers: numbers of each transform, the order check, and the contract that
replayed experience is transformed exactly as rollout transformed it.

``TransformProbe`` acts at random and stores, as its rollout info, the transformed
time step its ``rollout_step`` saw (and whether the transformer's statistics were
frozen then). Every update records the experience it trains on, so a test compares
the replayed, transformed rows with what rollout produced for the same steps.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import pytest
import torch
import torch.nn as nn

import alf.nest as nest
from alf.algorithms.config import TrainerConfig
from alf.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf.algorithms.on_policy_algorithm import OnPolicyAlgorithm
from alf.data_structures import AlgStep, Experience, LossInfo, StepType, TimeStep
from alf.data_transformers import (
    FrameStacker,
    HindsightExperienceTransformer,
    IdentityDataTransformer,
    ImageScaleTransformer,
    ObservationNormalizer,
    RewardClipping,
    RewardNormalizer,
    RewardScaling,
    SequentialDataTransformer,
    UntransformedTimeStep,
    create_data_transformer,
    l2_distance_reward_fn,
    prenormalizing,
)
from alf.environments import suite_gym
from alf.environments.utils import create_environment
from alf.experience_replayers.replay_buffer import ReplayBuffer
from alf.tensor_specs import TensorSpec
from alf.utils.normalizers import RunningMeanVar
from alf.utils.schedulers import update_progress

COUNTING = "alf.environments.toy_envs:CountingEnv-v0"
IMAGE = "alf.environments.toy_envs:ImageEnv-v0"
POINT_GOAL = "alf.environments.point_goal_env:PointGoal-v0"


class ProbeInfo(NamedTuple):
    time_step: Any = ()
    frozen: Any = ()


class ProbeTrainInfo(NamedTuple):
    loss: Any = ()


class TransformProbe(OffPolicyAlgorithm):
    """Random actions; rollout info = the transformed time step seen; a dummy loss."""

    def __init__(self, observation_spec, action_spec, reward_spec=TensorSpec(()), **kwargs):
        super().__init__(
            observation_spec, action_spec, reward_spec, name="TransformProbe", **kwargs
        )
        self._w = nn.Parameter(torch.zeros(()))
        self.trained = []

    def predict_step(self, inputs, state):
        return AlgStep(output=self._random_action(inputs), state=state)

    def _random_action(self, inputs):
        spec = self._action_spec
        batch_size = inputs.step_type.shape[0]
        if spec.is_discrete:
            return torch.randint(int(spec.minimum), int(spec.maximum) + 1, (batch_size,))
        low, high = torch.as_tensor(spec.minimum), torch.as_tensor(spec.maximum)
        return low + (high - low) * torch.rand(batch_size, *spec.shape)

    def rollout_step(self, inputs, state):
        frozen = torch.full(inputs.step_type.shape, not self._data_transformer.training)
        info = ProbeInfo(time_step=inputs, frozen=frozen)
        return AlgStep(output=self._random_action(inputs), state=state, info=info)

    def train_step(self, inputs, state, rollout_info):
        loss = (self._w - 1.0).expand(inputs.step_type.shape[0]) ** 2
        return AlgStep(state=state, info=ProbeTrainInfo(loss=loss))

    def calc_loss(self, info):
        return LossInfo(loss=info.loss)

    def update_from_experience(self, experience, valid_masks=None):
        self.trained.append(nest.map_structure(lambda x: x.clone(), experience))
        return super().update_from_experience(experience, valid_masks)


def _env(name, num_envs=2, seed=0, **kwargs):
    return create_environment(
        env_name=name,
        env_load_fn=functools.partial(suite_gym.load, **kwargs),
        num_parallel_environments=num_envs,
        nonparallel=True,
        seed=seed,
    )


@pytest.fixture
def make_probe():
    envs = []

    def _make(env_name, transformer_ctor, env_kwargs=None, **config):
        env = _env(env_name, **(env_kwargs or {}))
        envs.append(env)
        cfg = TrainerConfig(data_transformer_ctor=transformer_ctor, **config)
        transformer = create_data_transformer(transformer_ctor, env.observation_spec())
        probe = TransformProbe(
            transformer.transformed_observation_spec,
            env.action_spec(),
            env.reward_spec(),
            env=env,
            config=cfg,
        )
        probe.set_data_transformer(transformer)
        return probe

    yield _make
    for env in envs:
        env.close()
    update_progress(0, 0, 0.0)


SAMPLED = dict(
    unroll_length=4,
    replay_buffer_length=64,
    mini_batch_size=6,
    mini_batch_length=3,
    num_updates_per_train_iter=2,
    whole_replay_buffer_training=False,
    clear_replay_buffer=False,
)
# Whole-buffer training with clearing (PPO's way, with the bootstrap row); the buffer
# keeps 4 more steps than an unroll, so FrameStacker's history is still readable.
WHOLE = dict(
    unroll_length=6,
    replay_buffer_length=10,
    mini_batch_size=2,
    mini_batch_length=3,
    num_updates_per_train_iter=1,
    whole_replay_buffer_training=True,
    clear_replay_buffer=True,
)


def _compare_trained_with_rollout(alg, min_rows=20):
    """Every frozen-rollout row trained on equals the rollout's transformed time step."""
    compared = 0
    for exp in alg.trained:
        frozen = exp.rollout_info.frozen  # [T, B]
        if not bool(frozen.any()):
            continue
        replayed, rolled = exp.time_step, exp.rollout_info.time_step
        for (path, a), b in zip(nest.flatten_with_path(replayed), nest.flatten(rolled)):
            assert a.shape == b.shape, path
            torch.testing.assert_close(a[frozen], b[frozen], rtol=1e-6, atol=1e-6, msg=path)
        compared += int(frozen.sum())
    assert compared >= min_rows


def _train_then_freeze(alg, warmup=3, frozen=4):
    for _ in range(warmup):
        alg.train_iter()
    alg.data_transformer.eval()
    for _ in range(frozen):
        alg.train_iter()


CASES = {
    "observation_normalizer_replay": (
        COUNTING,
        functools.partial(ObservationNormalizer, update_mode="replay", clipping=1.5),
        {},
    ),
    "observation_normalizer_rollout": (
        COUNTING,
        functools.partial(ObservationNormalizer, update_mode="rollout"),
        {},
    ),
    "reward_normalizer": (COUNTING, functools.partial(RewardNormalizer, clip_value=2.0), {}),
    "reward_normalizer_return": (
        COUNTING,
        functools.partial(RewardNormalizer, clip_value=2.0, update_mode="rollout", discount=0.9),
        dict(terminate_at=4),
    ),
    "reward_clipping": (COUNTING, functools.partial(RewardClipping, minmax=(0.5, 2.0)), {}),
    "reward_scaling": (COUNTING, functools.partial(RewardScaling, scale=-3.0), {}),
    "untransformed": (
        COUNTING,
        [UntransformedTimeStep, functools.partial(RewardScaling, scale=2)],
        {},
    ),
    "image_scale": (IMAGE, ImageScaleTransformer, dict(terminate_at=4)),
    "frame_stacker": (COUNTING, functools.partial(FrameStacker, stack_size=3), {}),
    "pipeline": (
        IMAGE,
        [
            UntransformedTimeStep,
            functools.partial(FrameStacker, stack_size=3, stack_axis=-1, fields=["image"]),
            functools.partial(ImageScaleTransformer, fields=["image"]),
            functools.partial(ObservationNormalizer, fields=["count"], update_mode="rollout"),
            functools.partial(RewardScaling, scale=0.5),
        ],
        dict(terminate_at=4, dict_obs=True),
    ),
    "her_proportion_0": (
        POINT_GOAL,
        functools.partial(HindsightExperienceTransformer, her_proportion=0.0),
        dict(max_episode_steps=5),
    ),
}


@pytest.mark.parametrize("mode", ["sampled", "whole"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_replay_transforms_as_rollout_did(make_probe, case, mode):
    env_name, ctor, env_kwargs = CASES[case]
    alg = make_probe(env_name, ctor, env_kwargs, **(SAMPLED if mode == "sampled" else WHOLE))
    _train_then_freeze(alg)
    _compare_trained_with_rollout(alg)


def test_frame_stacker_repeats_the_first_frame_across_episode_boundaries(make_probe):
    """CountingEnv's observation is the step count (episodes of 5 steps): rollout stacks."""
    alg = make_probe(COUNTING, functools.partial(FrameStacker, stack_size=3), **SAMPLED)
    for _ in range(4):
        alg.train_iter()
    rolled = torch.cat([e.rollout_info.time_step.observation for e in alg.trained])  # [N, 3]
    rows = {tuple(r) for r in rolled.reshape(-1, 3).tolist()}
    expected = {(0, 0, 0), (0, 0, 1), (0, 1, 2), (1, 2, 3), (2, 3, 4), (3, 4, 5)}
    assert rows == expected
    # replayed rows are the same numbers
    replayed = torch.cat([e.time_step.observation.reshape(-1, 3) for e in alg.trained])
    assert {tuple(r) for r in replayed.tolist()} == expected


def test_frame_stacker_reads_history_across_sequences_and_episodes():
    """Replay of hand-made data: history before the sequence comes from the buffer."""
    spec = TensorSpec((1,))
    stacker = FrameStacker(spec, stack_size=3)
    step_types = [0, 1, 1, 2, 0, 1, 1]  # an episode of 4 steps, then a new one
    frames = torch.arange(10.0, 17.0).reshape(7, 1)
    buffer = ReplayBuffer(
        Experience(time_step=TimeStep(step_type=TensorSpec((), torch.int32), observation=spec)),
        num_environments=1,
        max_length=8,
    )
    steps = Experience(
        time_step=TimeStep(
            step_type=torch.tensor(step_types, dtype=torch.int32)[:, None],
            observation=frames[:, None],
        )
    )
    buffer.add_steps(steps)
    from alf.data_structures import BatchInfo

    def replay(start, length):
        exp = nest.map_structure(lambda x: x[start : start + length], steps)
        info = BatchInfo(
            env_ids=torch.tensor([0]), positions=torch.tensor([start]), replay_buffer=buffer
        )
        return stacker.transform_experience(exp._replace(batch_info=info)).observation[:, 0]

    assert replay(2, 3).tolist() == [[10, 11, 12], [11, 12, 13], [14, 14, 14]]
    assert replay(5, 2).tolist() == [[14, 14, 15], [14, 15, 16]]
    assert replay(0, 1).tolist() == [[10, 10, 10]]


def test_normalizer_statistics_count_each_step_once(make_probe):
    """Rollout mode counts every unrolled step once (not the bootstrap row); replay mode
    counts every replayed row once (the bootstrap row, transformed frozen, not at all)."""
    for update_mode in ("rollout", "replay"):
        ctor = functools.partial(ObservationNormalizer, update_mode=update_mode)
        alg = make_probe(COUNTING, ctor, **WHOLE)
        for _ in range(3):
            alg.train_iter()
        stats = alg.data_transformer.normalizer.statistics[0]
        assert int(stats.count) == 3 * 6 * 2, update_mode


def test_running_mean_var_matches_the_whole_sample():
    torch.manual_seed(0)
    batches = [torch.randn(n, 3) * torch.tensor([1.0, 2.0, 5.0]) + 4 for n in (5, 17, 1, 40)]
    stats = RunningMeanVar((3,))
    for b in batches:
        stats.update(b)
    data = torch.cat(batches).double()
    torch.testing.assert_close(stats.mean, data.mean(0))
    torch.testing.assert_close(stats.var, data.var(0, unbiased=False))
    assert int(stats.count) == 63


def test_running_mean_var_with_speed_follows_recent_data():
    stats = RunningMeanVar((), speed=10.0)
    for _ in range(100):
        stats.update(torch.zeros(5))
    for _ in range(20):
        stats.update(torch.full((5,), 10.0))
    # each batch of 5 has weight 0.5 once count > 10: the old mean is forgotten
    assert abs(float(stats.mean) - 10.0) < 1e-3


def test_observation_normalizer_numbers_and_eval_freezes():
    spec = {"a": TensorSpec((2,)), "b": TensorSpec((1,))}
    norm = ObservationNormalizer(spec, fields=["a"], update_mode="rollout", clipping=1.0)
    obs = {"a": torch.tensor([[1.0, 10.0], [3.0, 30.0]]), "b": torch.tensor([[7.0], [8.0]])}
    ts = TimeStep(step_type=torch.zeros(2, dtype=torch.int32), observation=obs)
    norm.transform_timestep(ts, ())  # rollout steps count when the iteration ends
    assert int(norm.normalizer.statistics[0].count) == 0
    norm.after_train_iter()
    assert int(norm.normalizer.statistics[0].count) == 2
    out, _ = norm.transform_timestep(ts, ())
    # mean (2, 20), std (1, 10): (x - mean) / std = -1, +1 (clipping 1 keeps them)
    torch.testing.assert_close(out.observation["a"], torch.tensor([[-1.0, -1.0], [1.0, 1.0]]))
    assert torch.equal(out.observation["b"], obs["b"])
    norm.eval()
    ts2 = ts._replace(observation={"a": obs["a"] + 100, "b": obs["b"]})
    out2, _ = norm.transform_timestep(ts2, ())
    assert int(norm.normalizer.statistics[0].count) == 2  # frozen in eval mode
    assert float(out2.observation["a"].max()) == 1.0  # clipped


def test_reward_normalizer_divides_by_std_without_centering():
    norm = RewardNormalizer(TensorSpec(()), update_mode="rollout")
    rewards = torch.tensor([1.0, 3.0, 5.0, 7.0])
    ts = TimeStep(step_type=torch.ones(4, dtype=torch.int32), reward=rewards)
    norm.transform_timestep(ts, ())
    norm.after_train_iter()
    out, _ = norm.transform_timestep(ts, ())
    torch.testing.assert_close(out.reward, rewards / rewards.std(unbiased=False))


def _vec_normalize_rewards(rewards, episode_length, gamma):
    """SB3's ``VecNormalize`` (rewards only, one env) on scripted rewards: the normalized
    rewards and the final variance of its running discounted return."""
    gym = pytest.importorskip("gymnasium")
    vec_env = pytest.importorskip("stable_baselines3.common.vec_env")

    class Scripted(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (1,))
        action_space = gym.spaces.Box(-1.0, 1.0, (1,))

        def __init__(self):
            self.i, self.t = 0, 0

        def reset(self, seed=None, options=None):
            self.t = 0
            return torch.zeros(1).numpy(), {}

        def step(self, action):
            reward, self.i, self.t = float(rewards[self.i]), self.i + 1, self.t + 1
            return torch.zeros(1).numpy(), reward, False, self.t == episode_length, {}

    env = vec_env.VecNormalize(vec_env.DummyVecEnv([Scripted]), norm_obs=False, gamma=gamma)
    env.reset()
    out = [float(env.step(torch.zeros(1, 1).numpy())[1][0]) for _ in rewards]
    return torch.tensor(out, dtype=torch.float64), env.ret_rms.var


def _alf_steps(rewards, episode_length):
    """The rewards as alf time steps of one env: a FIRST step (reward 0) opens each episode."""
    steps = []
    for i, r in enumerate(rewards, 1):
        if i % episode_length == 1 or episode_length == 1:
            steps.append((StepType.FIRST, 0.0))
        steps.append((StepType.LAST if i % episode_length == 0 else StepType.MID, float(r)))
    return steps


def test_reward_normalizer_discount_matches_vec_normalize():
    """With ``discount``, per-step statistics (``prenormalizing``) give VecNormalize's
    normalized rewards; in rollout mode the same statistics arrive at the iteration's end."""
    gamma, episode_length = 0.9, 7
    rewards = torch.randn(30, generator=torch.Generator().manual_seed(0)) * 3 + 1
    expected, expected_var = _vec_normalize_rewards(rewards, episode_length, gamma)
    steps = _alf_steps(rewards.tolist(), episode_length)

    def run(norm):
        state, out = (), []
        for step_type, r in steps:
            ts = TimeStep(
                step_type=torch.tensor([step_type], dtype=torch.int32),
                reward=torch.tensor([r]),
            )
            ts, state = norm.transform_timestep(ts, state)
            if step_type != StepType.FIRST:
                out.append(float(ts.reward[0]))
        return torch.tensor(out, dtype=torch.float64)

    clip = dict(clip_value=10.0, update_mode="rollout", discount=gamma)
    per_step = RewardNormalizer(TensorSpec(()), **clip)
    with prenormalizing(per_step):
        got = run(per_step)
    # VecNormalize starts from a variance of 1 with weight 1e-4: hence the tolerance
    torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-6)

    deferred = RewardNormalizer(TensorSpec(()), **clip)
    torch.testing.assert_close(run(deferred), rewards.double())  # statistics not applied yet
    deferred.after_train_iter()
    stats = deferred.normalizer.statistics[0]
    assert int(stats.count) == len(rewards)  # the FIRST steps are no samples
    assert float(stats.var) == pytest.approx(float(expected_var), rel=1e-3)
    # by hand: the variance of the discounted returns restarted every episode
    returns, ret = [], 0.0
    for i, r in enumerate(rewards.tolist()):
        ret = (0.0 if i % episode_length == 0 else gamma * ret) + r
        returns.append(ret)
    assert float(stats.var) == pytest.approx(float(torch.tensor(returns).var(unbiased=False)))


def test_reward_normalizer_discount_needs_rollout_mode():
    with pytest.raises(ValueError, match="rollout"):
        RewardNormalizer(TensorSpec(()), discount=0.99)


def test_image_scale_numbers():
    spec = TensorSpec((2, 2), torch.uint8)
    scale = ImageScaleTransformer(spec, min=0.0, max=1.0)
    x = torch.tensor([[[0, 255], [51, 102]]], dtype=torch.uint8)
    out, _ = scale.transform_timestep(TimeStep(observation=x), ())
    torch.testing.assert_close(out.observation, torch.tensor([[[0.0, 1.0], [0.2, 0.4]]]))
    assert scale.transformed_observation_spec.dtype == torch.float32


# -- order and bad input ----------------------------------------------------------------


def test_wrong_order_raises_naming_both_transformers():
    spec = TensorSpec((3,))
    with pytest.raises(ValueError, match="FrameStacker must come before ObservationNormalizer"):
        SequentialDataTransformer([ObservationNormalizer, FrameStacker], spec)
    with pytest.raises(ValueError, match="UntransformedTimeStep must come before RewardScaling"):
        SequentialDataTransformer(
            [functools.partial(RewardScaling, scale=2.0), UntransformedTimeStep], spec
        )
    goal_spec = {k: TensorSpec((2,)) for k in ("observation", "achieved_goal", "desired_goal")}
    with pytest.raises(ValueError, match="HindsightExperienceTransformer must come before Reward"):
        SequentialDataTransformer(
            [functools.partial(RewardScaling, scale=2.0), HindsightExperienceTransformer],
            goal_spec,
        )
    ok = SequentialDataTransformer(
        [UntransformedTimeStep, HindsightExperienceTransformer, RewardClipping], goal_spec
    )
    assert [type(t).__name__ for t in ok.members][1] == "HindsightExperienceTransformer"


def test_bad_input_names_the_culprit():
    with pytest.raises(ValueError, match="field 'pixels' is not in the observation"):
        FrameStacker({"image": TensorSpec((3, 4, 4))}, fields=["pixels"])
    with pytest.raises(ValueError, match="needs a dict observation"):
        HindsightExperienceTransformer(TensorSpec((4,)))
    with pytest.raises(ValueError, match="'desired_goal' is not in the observation"):
        HindsightExperienceTransformer({"achieved_goal": TensorSpec((2,))})
    with pytest.raises(ValueError, match="must be a uint8 image"):
        ImageScaleTransformer(TensorSpec((3, 4, 4)))
    with pytest.raises(ValueError, match="stack_axis 3 is out of range"):
        FrameStacker(TensorSpec((3, 4, 4)), stack_axis=3)
    with pytest.raises(ValueError, match="update_mode"):
        ObservationNormalizer(TensorSpec((3,)), update_mode="sometimes")
    goal_spec = {k: TensorSpec((2,)) for k in ("observation", "achieved_goal", "desired_goal")}
    no_buffer = Experience(time_step=TimeStep(step_type=torch.zeros(2, 3, dtype=torch.int32)))
    for transformer in (FrameStacker(TensorSpec((3,))), HindsightExperienceTransformer(goal_spec)):
        name = type(transformer).__name__
        with pytest.raises(ValueError, match=f"{name}.transform_experience needs .*replay_buffer"):
            transformer.transform_experience(no_buffer)


class _OnPolicyProbe(OnPolicyAlgorithm, TransformProbe):
    pass


class _ReadsReplayBuffer(IdentityDataTransformer):
    reads_replay_buffer = True


def test_on_policy_counts_replay_statistics_at_rollout_and_refuses_replay_readers():
    """An on-policy learner replays nothing: a 'replay' normalizer counts the rollout's
    steps (once each, the bootstrap row not), and a transformer that reads the replay
    buffer is refused by name."""
    env = _env(COUNTING)
    try:
        transformer = create_data_transformer(ObservationNormalizer, env.observation_spec())
        assert transformer.needs_replay() == ["ObservationNormalizer"]
        alg = _OnPolicyProbe(
            transformer.transformed_observation_spec,
            env.action_spec(),
            env=env,
            config=TrainerConfig(unroll_length=5),
        )
        alg.set_data_transformer(transformer)
        assert transformer.needs_replay() == []
        stats = transformer.normalizer.statistics[0]
        for iteration in range(1, 3):
            alg.train_iter()
            assert int(stats.count) == 5 * 2 * iteration
        with pytest.raises(ValueError, match=r"\['_ReadsReplayBuffer'\] only act on replayed"):
            alg.set_data_transformer(_ReadsReplayBuffer(transformer.transformed_observation_spec))
        assert alg.data_transformer is transformer  # not taken
    finally:
        env.close()


# -- metrics and prenormalization -------------------------------------------------------------


def test_metrics_use_raw_rewards(make_probe):
    alg = make_probe(COUNTING, functools.partial(RewardScaling, scale=100.0), **SAMPLED)
    for _ in range(6):
        alg.train_iter()
    # raw episode returns, from the raw rewards the buffer stored
    stored = alg.replay_buffer.gather_all().time_step
    returns = []
    for env in range(2):
        total = None
        for step_type, reward in zip(stored.step_type[env].tolist(), stored.reward[env].tolist()):
            if step_type == StepType.FIRST:
                total = 0.0
            elif total is not None:
                total += reward
                if step_type == StepType.LAST:
                    returns.append(total)
    assert returns and alg.metrics.num_episodes == len(returns)
    assert float(alg.metrics.average_return) == pytest.approx(sum(returns) / len(returns))


def test_prenormalize_initializes_statistics_without_storing(make_probe):
    ctor = functools.partial(ObservationNormalizer, update_mode="replay")
    alg = make_probe(COUNTING, ctor, **SAMPLED)
    steps = alg.prenormalize(10)
    stats = alg.data_transformer.normalizer.statistics[0]
    assert steps == 20 and int(stats.count) == 20
    # counts 0..4 cycle in each env (episodes of 5 actions, FIRST at 0 ... LAST at 5)
    expected = torch.tensor([0, 1, 2, 3, 4, 5, 0, 1, 2, 3], dtype=torch.float64)
    torch.testing.assert_close(stats.mean[0], expected.mean())
    assert alg.replay_buffer is None and alg.metrics.env_steps == 16
    alg.train_iter()  # starts from reset: the first stored step is FIRST
    assert alg.replay_buffer.gather_all().time_step.step_type[:, 0].tolist() == [0, 0]


# -- hindsight relabeling -------------------------------------------------------------------


def test_her_relabels_the_proportion_with_future_goals_and_recomputes_rewards(make_probe):
    her = functools.partial(HindsightExperienceTransformer, her_proportion=0.3)
    store_only = dict(SAMPLED, initial_collect_steps=1000)
    alg = make_probe(POINT_GOAL, her, dict(max_episode_steps=7), **store_only)
    for _ in range(10):  # 40 steps per env: several episodes of 7 steps, nothing trained
        alg.train_iter()
    buffer = alg.replay_buffer
    torch.manual_seed(0)
    batch, info = buffer.get_batch(4000, 3)
    raw = nest.map_structure(lambda x: x.transpose(0, 1), batch)
    out = alg.learner._transform(raw, info.env_ids, info.positions)
    desired, raw_desired = out.observation["desired_goal"], raw.observation["desired_goal"]
    relabeled = (desired != raw_desired).any(-1).any(0)  # [B]
    assert abs(float(relabeled.float().mean()) - 0.3) < 0.04
    # every row's reward is the reward function of its (possibly new) goal, 0 at FIRST
    expected = l2_distance_reward_fn(out.observation["achieved_goal"], desired)
    first = out.step_type == StepType.FIRST
    assert torch.equal(out.reward[~first], expected[~first])
    assert bool((out.reward[first] == 0).all())
    # successes were rare with the env's goals; relabeling makes some
    assert float((out.reward[~first] == 0).float().mean()) > 0.05
    # not relabeled: untouched; relabeled: one goal per sequence, achieved at a step from
    # the sequence's last row to the end of that episode
    assert torch.equal(out.reward[:, ~relabeled], raw.reward[:, ~relabeled])
    for b in relabeled.nonzero().flatten()[:200].tolist():
        goal = desired[0, b]
        assert bool((desired[:, b] == goal).all())
        env_id, last = int(info.env_ids[b]), int(info.positions[b]) + 2
        end = last + int(buffer.steps_to_episode_end(torch.tensor([env_id]), torch.tensor([last])))
        achieved = buffer.get_field(
            "time_step.observation.achieved_goal", torch.tensor(env_id), torch.arange(last, end + 1)
        )
        assert bool((achieved == goal).all(-1).any()), b


def test_steps_to_episode_end_scans_across_chunks():
    spec = Experience(time_step=TimeStep(step_type=TensorSpec((), torch.int32)))
    buffer = ReplayBuffer(spec, num_environments=2, max_length=16)
    types = torch.tensor(
        [[0, 1, 1, 1, 1, 1, 1, 2, 0, 1, 2, 0, 1, 1], [0, 2, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]],
        dtype=torch.int32,
    )
    buffer.add_steps(Experience(time_step=TimeStep(step_type=types.T)))
    env_ids = torch.tensor([0, 0, 0, 0, 1, 1])
    positions = torch.tensor([0, 7, 8, 12, 1, 2])
    for chunk in (1, 3, 64):
        steps = buffer.steps_to_episode_end(env_ids, positions, chunk=chunk)
        assert steps.tolist() == [7, 0, 2, 1, 0, 11], chunk  # running episodes end at the newest


def test_replay_buffer_get_field_rejects_overwritten_positions():
    spec = Experience(time_step=TimeStep(step_type=TensorSpec((), torch.int32)))
    buffer = ReplayBuffer(spec, num_environments=1, max_length=4)
    buffer.add_steps(Experience(time_step=TimeStep(step_type=torch.arange(6)[:, None].int())))
    assert buffer.oldest_readable_pos().tolist() == [2]
    got = buffer.get_field("time_step.step_type", torch.tensor(0), torch.tensor([2, 5]))
    assert got.tolist() == [2, 5]
    with pytest.raises(ValueError, match="position 1 of env 0 is not in the storage"):
        buffer.get_field("time_step.step_type", torch.tensor(0), torch.tensor([1]))


def test_statistics_are_checkpointed(make_probe):
    pipeline = [
        functools.partial(ObservationNormalizer, update_mode="rollout"),
        RewardNormalizer,
    ]
    alg = make_probe(COUNTING, pipeline, **SAMPLED)
    for _ in range(3):
        alg.train_iter()
    alg.to("cpu")
    state = {k: v for k, v in alg.state_dict().items() if "_data_transformer" in k}
    assert len(state) == 6  # mean, var, count of each normalizer
    other = make_probe(COUNTING, pipeline, **SAMPLED)
    other.load_state_dict(alg.state_dict())
    ts = TimeStep(
        step_type=torch.ones(3, dtype=torch.int32),
        reward=torch.tensor([0.0, 1.0, 3.0]),
        observation=torch.tensor([[0.0], [2.0], [5.0]]),
    )
    alg.eval()
    other.eval()
    a, _ = alg.data_transformer.transform_timestep(ts, [(), ()])
    b, _ = other.data_transformer.transform_timestep(ts, [(), ()])
    assert torch.equal(a.observation, b.observation) and torch.equal(a.reward, b.reward)
    assert not torch.equal(a.observation, ts.observation)
