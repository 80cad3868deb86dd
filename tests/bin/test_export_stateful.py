"""Exported policies that keep a state: an LSTM PPO policy trained on the memory task
(``RepeatFirstObservation-v0``, which no stateless policy solves) and a PPO CartPole policy
with ``FrameStacker``, exported by ``alf.bin.export`` to ONNX, TorchScript and
``torch.export``, stepped by ``alf.export.runtime.ExportedPolicy``: on whole episodes their
actions are ``predict_step``'s (stepped by alf's ``Unroller``) exactly and their returns are
``alf.bin.play``'s. Library-level checks: the names and signature of the exported function,
the reset at FIRST inside the file, dict observations, the previous action as state, files
without metadata, and one-line errors.
"""

import functools
import os

import numpy as np
import pytest
import torch

import alf
from alf.bin.play import play_episodes
from alf.data_structures import StepType
from alf.export import policy_export, runtime, stateful
from alf.export.parity import episode_parity
from tests.bin.test_export import FORMATS, HAS_ONNX, NOISE, _export, _restored
from tests.bin.test_train_play import REPO, finish, start

CONFS = os.path.join(REPO, "tests", "confs")
RUNS = {
    # 30 iterations x 8 envs x 20 steps: the LSTM policy solves the task (return 1)
    "memory_lstm": ("tiny_ppo_rnn_memory_conf.py", "TrainerConfig.num_iterations=30"),
    "cart_pole_frame_stack": ("tiny_ppo_frame_stack_conf.py", "TrainerConfig.num_iterations=16"),
}
EPISODES = 5


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The trained runs ``{name: root_dir}`` (trained side by side)."""
    parent = tmp_path_factory.mktemp("stateful_runs")
    dirs = {name: str(parent / name) for name in RUNS}
    procs = [
        start(
            "alf.bin.train",
            "--conf",
            os.path.join(CONFS, conf),
            "--root_dir",
            dirs[name],
            "--nostore_snapshot",
            "--conf_param",
            param,
        )
        for name, (conf, param) in RUNS.items()
    ]
    for proc in procs:
        code, _, stderr = finish(proc, timeout=240)
        assert code == 0, stderr[-3000:]
    return dirs


@pytest.fixture(autouse=True)
def clean_configs():
    num_threads = torch.get_num_threads()
    alf.reset_configs()
    yield
    alf.reset_configs()
    torch.set_num_threads(num_threads)


@pytest.mark.parametrize("name", list(RUNS))
@pytest.mark.parametrize("fmt, ext", FORMATS)
def test_stateful_export_plays_as_play(runs, tmp_path, name, fmt, ext):
    output = tmp_path / f"policy{ext}"
    code, stdout, stderr = _export(
        "--root_dir", runs[name], "--output", output, "--verify", 200, "--verify_episodes", 2
    )
    assert code == 0, stderr[-3000:]
    assert not [line for line in stderr.splitlines() if any(n in line for n in NOISE)], stderr
    assert "checked on 200 random observations: max |action difference| 0\n" in stdout
    assert "checked on 2 episodes" in stdout and "max |action difference| 0;" in stdout
    if name == "memory_lstm":
        assert (
            "inputs: observation float32[B, 3], step_type int32[B], "
            "state.policy.actor.0.0 float32[B, 16], state.policy.actor.0.1 float32[B, 16]"
        ) in stdout
        assert "outputs: action int64[B], new_state.policy.actor.0.0 float32[B, 16]" in stdout
    else:
        assert "step_type int32[B], state.frame_stack float32[B, 2, 4]" in stdout
        assert "outputs: action int64[B], new_state.frame_stack float32[B, 2, 4]" in stdout

    loaded = runtime.ExportedPolicy.load(str(output))
    assert loaded.stateful and loaded.metadata["algorithm"] == "PPOAlgorithm"
    env, algorithm = _restored(runs[name])  # its env seeded 0, as alf.bin.play's
    try:
        played = play_episodes(algorithm, env, EPISODES)
        parity = episode_parity(algorithm, loaded, env, EPISODES, seed=0)
    finally:
        env.close()
    print(
        f"{name} {fmt}: play {played}, exported {parity.exported_returns}, "
        f"max action difference {parity.max_action_difference}, {parity.steps} steps"
    )
    assert parity.max_action_difference == 0
    assert parity.exported_returns == played == parity.reference_returns
    assert parity.steps >= EPISODES * 5
    if name == "memory_lstm":  # solved: only a policy that keeps the cue gets 1
        assert [r for r, _ in played] == [1.0] * EPISODES
    else:
        assert len({length for _, length in played}) > 1


def test_the_state_carried_matters(runs, tmp_path):
    """The exported files with their state dropped (zeros at every MID step; a FIRST step at
    every step, so the frame stack holds the current frame alone) act differently: the
    memory policy no longer solves the task, and the frame-stacked policy takes other
    actions on some steps of its own episodes (85 of 286 when measured)."""
    loaded = {}
    for name in RUNS:
        output = str(tmp_path / f"{name}.pt")
        code, _, stderr = _export("--root_dir", runs[name], "--output", output, "--verify", 0)
        assert code == 0, stderr[-3000:]
        loaded[name] = runtime.ExportedPolicy.load(output)
    env, _ = _restored(runs["memory_lstm"])
    try:
        kept = loaded["memory_lstm"].run_episodes(env, 20)
        env.seed(0)
        dropped = runtime.ExportedPolicy.run_episodes(_Forgetful(loaded["memory_lstm"]), env, 20)
    finally:
        env.close()
    assert np.mean([r for r, _ in kept]) == 1.0
    # without the state its answer cannot depend on the cue: wrong for one of the two cues
    assert sorted({r for r, _ in dropped}) == [-1.0, 1.0]
    alf.reset_configs()
    policy = loaded["cart_pole_frame_stack"]
    differ = []

    def without_history(time_step, action):
        first = np.ones(time_step.step_type.shape, bool)
        alone, _ = policy.step(time_step.observation, first, policy.initial_state(1))
        differ.append(not np.array_equal(alone, action))

    env, _ = _restored(runs["cart_pole_frame_stack"])
    try:
        policy.run_episodes(env, EPISODES, on_step=without_history)
    finally:
        env.close()
    assert 0 < sum(differ) < len(differ)


class _Forgetful:
    """An ``ExportedPolicy`` whose state is zeros at every step (the cue is forgotten)."""

    def __init__(self, policy):
        self._policy = policy

    def initial_state(self, batch_size):
        return self._policy.initial_state(batch_size)

    def step(self, observation, step_type, state):
        zeros = self._policy.initial_state(len(step_type))
        action, _ = self._policy.step(observation, torch.full_like(step_type, 1), zeros)
        return action, zeros


# -- library level ---------------------------------------------------------------------


def _dict_rnn_frame_stack_policy(tmp_path, prev_action=None):
    """An untrained PPO policy on a dict observation: an LSTM actor, and the field ``a``
    stacked over 3 frames."""
    from alf.algorithms.config import TrainerConfig
    from alf.algorithms.ppo_algorithm import PPOAlgorithm
    from alf.data_transformers import FrameStacker
    from alf.nest.utils import NestConcat
    from alf.networks.rnn_networks import ActorDistributionRNNNetwork, ValueRNNNetwork
    from alf.tensor_specs import BoundedTensorSpec, TensorSpec

    torch.manual_seed(0)
    observation_spec = {"a": TensorSpec((3,)), "b": TensorSpec((2,))}
    stacker = FrameStacker(observation_spec, stack_size=3, fields=["a"])
    net = dict(fc_layer_params=(8,), lstm_hidden_size=8, preprocessing_combiner=NestConcat())
    algorithm = PPOAlgorithm(
        observation_spec=stacker.transformed_observation_spec,
        action_spec=BoundedTensorSpec((), torch.int64, 0, 3),
        actor_network_ctor=functools.partial(ActorDistributionRNNNetwork, **net),
        value_network_ctor=functools.partial(ValueRNNNetwork, **net),
        config=TrainerConfig(root_dir=str(tmp_path), algorithm_ctor=PPOAlgorithm),
    )
    algorithm.set_data_transformer(stacker)
    return policy_export.ExportablePolicy(algorithm, observation_spec, prev_action), algorithm


def _formats():
    return [("torchscript", ".pt"), ("torch_export", ".pt2")] + (
        [("onnx", ".onnx")] if HAS_ONNX else []
    )


def test_signature_names_and_reset_inside_the_file(tmp_path):
    policy, algorithm = _dict_rnn_frame_stack_policy(tmp_path)
    assert policy.stateful and not policy.state.uses_prev_action
    assert policy.input_names == [
        "observation.a",
        "observation.b",
        "step_type",
        "state.frame_stack.a",
        "state.policy.actor.0.0",
        "state.policy.actor.0.1",
    ]
    assert policy.output_names == ["action"] + ["new_" + n for n in policy.input_names[3:]]
    assert [tuple(s.shape) for s in policy.input_specs[3:]] == [(2, 3), (8,), (8,)]
    leaves = policy_export.sample_observations(policy.observation_specs, 6, seed=4)
    junk = stateful.example_state(policy.state, 6, seed=9)
    zeros = policy.state.zeros(6)
    first = torch.full((6,), int(StepType.FIRST), dtype=torch.int32)
    mid = torch.full((6,), int(StepType.MID), dtype=torch.int32)
    observations = policy_export.sample_observations(policy.observation_specs, 400, seed=1)
    for fmt, ext in _formats():
        path = str(tmp_path / f"policy{ext}")
        policy_export.export(policy, path, fmt)
        loaded = runtime.ExportedPolicy.load(path)
        assert loaded.observation_names == ["observation.a", "observation.b"]
        assert loaded.state_names == policy.state.names
        assert policy_export.compare(policy, loaded, observations) == 0
        arrays = [x.numpy() for x in leaves]
        # at FIRST the state given is replaced by the initial one, inside the file
        with_junk = loaded(*arrays, first.numpy(), *(s.numpy() for s in junk))
        with_zeros = loaded(*arrays, first.numpy(), *(s.numpy() for s in zeros))
        for a, b in zip(with_junk, with_zeros):
            np.testing.assert_array_equal(a, b)
        # the frame stack at FIRST holds the first frame twice, as FrameStacker's
        np.testing.assert_array_equal(with_zeros[1], np.stack([arrays[0]] * 2, 1))
        # ... and at MID the state given is used
        new_mid = loaded(*arrays, mid.numpy(), *(s.numpy() for s in junk))
        assert not np.array_equal(new_mid[2], with_zeros[2])
        # step(): a dict observation and a bool first flag
        action, state = loaded.step({"a": arrays[0], "b": arrays[1]}, np.ones(6, bool))
        np.testing.assert_array_equal(action, with_zeros[0])
        assert [s.shape for s in state] == [(6, 2, 3), (6, 8), (6, 8)]


def test_gru_layers_and_continuous_actions(tmp_path):
    """Two GRU layers (one state leaf each) and a continuous action (the mean of a normal,
    squashed to the bounds): every format follows the eager policy through random
    episodes (to 1e-5)."""
    from alf.algorithms.config import TrainerConfig
    from alf.algorithms.ppo_algorithm import PPOAlgorithm
    from alf.networks.rnn_networks import ActorDistributionRNNNetwork
    from alf.tensor_specs import BoundedTensorSpec, TensorSpec

    torch.manual_seed(0)
    spec = TensorSpec((4,))
    algorithm = PPOAlgorithm(
        observation_spec=spec,
        action_spec=BoundedTensorSpec((2,), torch.float32, -1.0, 1.0),
        actor_network_ctor=functools.partial(
            ActorDistributionRNNNetwork,
            fc_layer_params=(8,),
            lstm_hidden_size=(8, 6),
            rnn_type="gru",
        ),
        config=TrainerConfig(root_dir=str(tmp_path), algorithm_ctor=PPOAlgorithm),
    )
    policy = policy_export.ExportablePolicy(algorithm, spec)
    assert policy.input_names == [
        "observation",
        "step_type",
        "state.policy.actor.0",
        "state.policy.actor.1",
    ]
    observations = policy_export.sample_observations(policy.observation_specs, 400, seed=6)
    for fmt, ext in _formats():
        path = str(tmp_path / f"policy{ext}")
        policy_export.export(policy, path, fmt)
        loaded = runtime.ExportedPolicy.load(path)
        assert loaded.initial_state(2)[1].shape == (2, 6)
        assert policy_export.compare(policy, loaded, observations) <= 1e-5


def test_previous_action_is_state_where_predict_step_reads_it(tmp_path):
    policy, algorithm = _dict_rnn_frame_stack_policy(tmp_path)
    assert not stateful.uses_prev_action(algorithm, policy._observation_spec, policy._transformers)
    predict_step = algorithm.predict_step

    def reading_prev_action(time_step, state):  # the previous action as a feature
        shift = time_step.prev_action.to(torch.float32).unsqueeze(-1)
        observation = dict(time_step.observation, b=time_step.observation["b"] + shift)
        return predict_step(time_step._replace(observation=observation), state)

    algorithm.predict_step = reading_prev_action
    policy = policy_export.ExportablePolicy(algorithm, policy._observation_spec)
    assert policy.state.uses_prev_action
    assert policy.input_names[-1] == "state.prev_action"
    assert policy.output_names[-1] == "new_state.prev_action"
    observations = policy_export.sample_observations(policy.observation_specs, 400, seed=2)
    for fmt, ext in _formats():
        path = str(tmp_path / f"policy{ext}")
        policy_export.export(policy, path, fmt)
        loaded = runtime.ExportedPolicy.load(path)
        assert policy_export.compare(policy, loaded, observations) == 0
        state = loaded.initial_state(4)
        state[-1] = np.full(4, 3, np.int64)  # zeroed at FIRST
        leaves = [o[:4].numpy() for o in observations]
        action, new_state = loaded.step(leaves, np.ones(4, bool), state)
        np.testing.assert_array_equal(new_state[-1], action)
        with torch.no_grad():
            reference = predict_step(
                policy_export.time_step_of(
                    {"a": torch.cat([observations[0][:4]] * 3, 1), "b": observations[1][:4]},
                    torch.zeros(4, dtype=torch.int32),
                ),
                algorithm.get_initial_predict_state(4),
            )
        np.testing.assert_array_equal(action, reference.output.numpy())


def test_file_without_metadata_runs_as_stateless(tmp_path):
    """A TorchScript file written before the metadata existed: a stateless policy."""

    class Linear(torch.nn.Module):
        def forward(self, x):
            return x.sum(-1)

    path = str(tmp_path / "old.pt")
    torch.jit.save(torch.jit.trace(Linear(), torch.ones(2, 3)), path)
    loaded = runtime.ExportedPolicy.load(path)
    assert loaded.metadata is None and not loaded.stateful
    action, state = loaded.step(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(action, [3.0, 3.0])
    assert state == []


def test_runtime_errors_are_one_line(tmp_path):
    policy, _ = _dict_rnn_frame_stack_policy(tmp_path)
    path = str(tmp_path / "policy.pt")
    policy_export.export(policy, path, "torchscript")
    loaded = runtime.ExportedPolicy.load(path)
    leaves = [np.zeros((2, 3), np.float32), np.zeros((2, 2), np.float32)]
    with pytest.raises(policy_export.ExportError, match="needs the step_type"):
        loaded.step(leaves)
    with pytest.raises(policy_export.ExportError, match="takes 2 observation leaves"):
        loaded.step(leaves[:1], np.ones(2, bool))


def test_negative_verify_episodes_is_one_line(runs, tmp_path):
    code, _, stderr = _export(
        "--root_dir", runs["memory_lstm"], "--output", tmp_path / "p.pt", "--verify_episodes", -1
    )
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert lines[0] == "alf.bin.export: error: --verify_episodes must be >= 0, got -1"
