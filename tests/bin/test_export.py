"""``alf.bin.export`` and ``alf.export.policy_export`` on real tiny runs: PPO CartPole
(discrete, MLP), PPO Pendulum (continuous, with an ``ObservationNormalizer``) and PPO on an
image env (a conv network, with ``ImageScaleTransformer``; separate networks, and one conv
encoder shared by the actor and value heads).

Each run's exported file (ONNX through onnxruntime, TorchScript, ``torch.export``) is run
on observations the environment produced while the checkpoint's policy acted on it, and on
random observations, and must give the actions of the acting path (data transformers in
eval mode, then ``predict_step``) to 1e-5 (discrete actions exactly).
"""

import logging
import os
import warnings

import numpy as np
import pytest
import torch

import alf
from alf.data_structures import StepType, TimeStep
from alf.export import policy_export
from alf.learners.unroller import AlgorithmPolicy, policy_step
from alf.tensor_specs import zeros_from_spec
from tests.bin.test_train_play import REPO, finish, start

CONFS = os.path.join(REPO, "tests", "confs")
RUNS = {
    "cart_pole": ("tiny_ppo_conf.py", "TrainerConfig.num_iterations=4"),
    "pendulum": ("tiny_ppo_pendulum_conf.py", "TrainerConfig.num_iterations=4"),
    "image": ("tiny_ppo_image_conf.py", "TrainerConfig.num_iterations=3"),
    "image_shared_encoder": ("tiny_ppo_image_shared_conf.py", "TrainerConfig.num_iterations=3"),
    "layers_image": ("tiny_ppo_layers_image_conf.py", "TrainerConfig.num_iterations=3"),
}
ENV_STEPS = 300  # observations collected from the env per run
#: the exporting libraries' chatter (torch.onnx's registry, the onnxscript / onnx_ir passes,
#: torch's pytree FutureWarning): none of it reaches the user
NOISE = ("torchvision", "Warning", "site-packages", "unused_removal", "constant_folding", "_pass")
NUM_RANDOM = 500


def _export(*args):
    return finish(start("alf.bin.export", *args), timeout=240)


def _has(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


HAS_ONNX = all(_has(m) for m in ("onnx", "onnxscript", "onnxruntime"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The trained runs: ``{name: root_dir}`` (trained two at a time)."""
    parent = tmp_path_factory.mktemp("export_runs")
    dirs = {name: str(parent / name) for name in RUNS}
    pending = list(RUNS.items())
    while pending:
        batch, pending = pending[:2], pending[2:]
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
            for name, (conf, param) in batch
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


def _restored(root_dir):
    """``(env, algorithm)`` of the run's newest checkpoint, as play builds them."""
    from alf.bin.play import build_experiment, load_checkpoint

    state = load_checkpoint(root_dir)
    env, algorithm = build_experiment(root_dir)
    algorithm.load_state_dict(state["algorithm"])
    return env, algorithm


def _act(algorithm, time_step, transform_state):
    policy = AlgorithmPolicy(algorithm, "predict")
    state = algorithm.get_initial_predict_state(time_step.step_type.shape[0])
    with torch.no_grad():
        return policy_step(policy, time_step, state, transform_state, state)


_REFERENCES = {}


def _reference(root_dir):
    """``_reference_of(root_dir)``, computed once per run."""
    if root_dir not in _REFERENCES:
        _REFERENCES[root_dir] = _reference_of(root_dir)
    return _REFERENCES[root_dir]


def _reference_of(root_dir):
    """Observation leaves ``[N, ...]`` and the actions the acting path took on them: the
    checkpoint's policy acting in its env for ``ENV_STEPS`` steps, then random
    observations (as MID steps)."""
    env, algorithm = _restored(root_dir)
    transformer = algorithm.data_transformer
    transform_state = zeros_from_spec(transformer.state_spec, 1)
    observations, actions = [], []
    try:
        time_step = env.reset()
        for _ in range(ENV_STEPS):
            taken = _act(algorithm, time_step, transform_state)
            observations.append(alf.nest.flatten(time_step.observation))
            actions.append(alf.nest.flatten(taken.step.output))
            time_step = env.step(taken.step.output)
        spec = env.observation_spec()
    finally:
        env.close()
    real = [torch.cat(leaves) for leaves in zip(*observations)]
    real_actions = [torch.cat(leaves) for leaves in zip(*actions)]
    random = policy_export.sample_observations(alf.nest.flatten(spec), NUM_RANDOM, seed=7)
    batch = NUM_RANDOM
    time_step = TimeStep(
        step_type=torch.full((batch,), StepType.MID, dtype=torch.int32),
        reward=torch.zeros(batch),
        discount=torch.ones(batch),
        observation=alf.nest.pack_sequence_as(spec, random),
        prev_action=(),
        env_id=torch.arange(batch, dtype=torch.int32),
    )
    random_actions = alf.nest.flatten(
        _act(algorithm, time_step, zeros_from_spec(transformer.state_spec, batch)).step.output
    )
    leaves = [torch.cat([a, b]) for a, b in zip(real, random)]
    expected = [torch.cat([a, b]) for a, b in zip(real_actions, random_actions)]
    return leaves, expected, algorithm


def _check_file(path, fmt, leaves, expected):
    loaded = policy_export.LoadedPolicy(str(path), fmt)
    got = loaded(*(x.numpy() for x in leaves))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        e = e.numpy()
        assert g.shape == e.shape and g.dtype == e.dtype
        if e.dtype.kind in "iu":
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=0, atol=1e-5)
    return got


FORMATS = [
    pytest.param("onnx", ".onnx", marks=pytest.mark.skipif(not HAS_ONNX, reason="needs alf[onnx]")),
    ("torchscript", ".pt"),
    ("torch_export", ".pt2"),
]


@pytest.mark.parametrize("name", list(RUNS))
@pytest.mark.parametrize("fmt, ext", FORMATS)
def test_exported_policy_acts_as_the_checkpoint(runs, tmp_path, name, fmt, ext):
    output = tmp_path / f"policy{ext}"
    code, stdout, stderr = _export("--root_dir", runs[name], "--output", output, "--verify", 200)
    assert code == 0, stderr[-3000:]
    assert f"to {output}" in stdout and "checked on 200 random observations" in stdout
    assert "checked on 1 episode (" in stdout and " against predict_step: max |action" in stdout
    assert not [line for line in stderr.splitlines() if any(n in line for n in NOISE)], stderr
    leaves, expected, algorithm = _reference(runs[name])
    assert len(leaves[0]) == ENV_STEPS + NUM_RANDOM
    _check_file(output, fmt, leaves, expected)
    if name == "cart_pole":
        assert "inputs: observation float32[B, 4]" in stdout
        assert "outputs: action int64[B]" in stdout
        assert len(set(expected[0].tolist())) == 2  # both actions taken: a real check
    if name == "pendulum":  # the normalizer is folded in, and it matters
        normalizer = algorithm.data_transformer.members[0].normalizer
        stats = normalizer._stats[0]
        assert float(stats.mean.abs().max()) > 0.05 and float((stats.var - 1).abs().max()) > 0.05
        assert float(expected[0].std()) > 1e-3
    if name.startswith("image"):
        assert "inputs: observation uint8[B, 3, 10, 10]" in stdout
    if name == "layers_image":  # a Sequential of alf.layers as the shared encoder
        assert "inputs: observation uint8[B, 3, 8, 8]" in stdout
        assert "_encoding_network._modules_list.2._conv.weight" in algorithm.state_dict()
    if name == "image_shared_encoder":  # the file is the whole policy, encoder included
        assert algorithm.encoding_network is not None
        assert set(algorithm.state_dict()) >= {"_encoding_network._conv_layers.0._conv.weight"}


def test_quiet_exporters_silences_the_libraries_and_keeps_alf_and_errors():
    torch_logger = logging.getLogger("torch.onnx._internal.exporter._registration")
    onnx_logger = logging.getLogger("onnxscript.optimizer._constant_folding")
    levels = [logging.getLogger(n).level for n in policy_export.EXPORTER_LOGGERS]
    assert torch_logger.isEnabledFor(logging.WARNING)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with policy_export.quiet_exporters():
            assert not torch_logger.isEnabledFor(logging.WARNING)
            assert not onnx_logger.isEnabledFor(logging.WARNING)
            assert torch_logger.isEnabledFor(logging.ERROR)
            assert logging.getLogger("alf.x").isEnabledFor(logging.getLogger().level)
            for module in ("torch.utils._pytree", "copyreg", "alf.export.policy_export"):
                warnings.warn_explicit("deprecated", FutureWarning, "f.py", 1, module=module)
            tracer = torch.jit.TracerWarning
            warnings.warn_explicit("traced", tracer, "f.py", 3, module="alf.utils.dist_utils")
        warnings.warn_explicit("deprecated", FutureWarning, "f.py", 2, module="copyreg")
    assert [w.lineno for w in caught] == [1, 2]  # alf's own inside, anyone's after
    assert [logging.getLogger(n).level for n in policy_export.EXPORTER_LOGGERS] == levels
    assert torch_logger.isEnabledFor(logging.WARNING)


def test_nested_observations_and_names(tmp_path):
    """A dict observation becomes one named input per leaf (library level, untrained)."""
    import functools

    from alf.algorithms.config import TrainerConfig
    from alf.algorithms.ppo_algorithm import PPOAlgorithm
    from alf.networks.actor_distribution_networks import ActorDistributionNetwork
    from alf.networks.value_networks import ValueNetwork
    from alf.tensor_specs import BoundedTensorSpec, TensorSpec

    observation_spec = {"a": TensorSpec((3,)), "b": TensorSpec((2,))}
    action_spec = BoundedTensorSpec((2,), torch.float32, -1.0, 1.0)
    algorithm = PPOAlgorithm(
        observation_spec=observation_spec,
        action_spec=action_spec,
        actor_network_ctor=functools.partial(ActorDistributionNetwork, fc_layer_params=(8,)),
        value_network_ctor=functools.partial(ValueNetwork, fc_layer_params=(8,)),
        config=TrainerConfig(root_dir=str(tmp_path), algorithm_ctor=PPOAlgorithm),
    )
    policy = policy_export.ExportablePolicy(algorithm, observation_spec)
    assert policy.input_names == ["observation.a", "observation.b"]
    assert policy.output_names == ["action"]
    path = tmp_path / "policy.pt"
    policy_export.export(policy, str(path), "torchscript")
    leaves = policy_export.sample_observations(policy.input_specs, 64, seed=3)
    assert policy_export.compare(policy, policy_export.LoadedPolicy(str(path)), leaves) < 1e-6
    if HAS_ONNX:
        path = tmp_path / "policy.onnx"
        policy_export.export(policy, str(path), "onnx")
        loaded = policy_export.LoadedPolicy(str(path))
        assert loaded._inputs == ["observation.a", "observation.b"]
        assert policy_export.compare(policy, loaded, leaves) < 1e-5


def test_shared_conv_encoder_policy_exports_whole(tmp_path):
    """A PPO policy with a shared conv encoder (``encoding_network_ctor``, as the Breakout
    conf): the exported files act as encoder then actor head, in every format."""
    import functools

    from alf.algorithms.config import TrainerConfig
    from alf.algorithms.ppo_algorithm import PPOAlgorithm
    from alf.networks.encoding_networks import EncodingNetwork
    from alf.tensor_specs import BoundedTensorSpec

    torch.manual_seed(0)
    observation_spec = BoundedTensorSpec((2, 12, 12), torch.float32, 0.0, 1.0)
    algorithm = PPOAlgorithm(
        observation_spec=observation_spec,
        action_spec=BoundedTensorSpec((), torch.int64, 0, 3),
        encoding_network_ctor=functools.partial(
            EncodingNetwork, conv_layer_params=((4, 3, 2),), fc_layer_params=(8,)
        ),
        config=TrainerConfig(root_dir=str(tmp_path), algorithm_ctor=PPOAlgorithm),
    )
    policy = policy_export.ExportablePolicy(algorithm, observation_spec)
    leaves = policy_export.sample_observations(policy.input_specs, 256, seed=2)
    with torch.no_grad():
        encoding, _ = algorithm.encoding_network(leaves[0])
        dist, _ = algorithm.actor_network.head(encoding)
        by_parts = dist.probs.argmax(-1)
        assert torch.equal(policy(*leaves), by_parts)
    assert len(set(by_parts.tolist())) >= 2  # the actions depend on the observation
    formats = [("torchscript", ".pt"), ("torch_export", ".pt2")]
    formats += [("onnx", ".onnx")] if HAS_ONNX else []
    for fmt, ext in formats:
        path = str(tmp_path / f"policy{ext}")
        policy_export.export(policy, path, fmt)
        (actions,) = policy_export.LoadedPolicy(path)(leaves[0].numpy())
        np.testing.assert_array_equal(actions, by_parts.numpy())
    if HAS_ONNX:
        import onnx

        ops = {node.op_type for node in onnx.load(str(tmp_path / "policy.onnx")).graph.node}
        assert "Conv" in ops  # the encoder is in the file


# -- what cannot be exported ------------------------------------------------------------


def _algorithm(conf, *gin_params):
    from alf.algorithms.config import TrainerConfig
    from alf.environments.utils import create_environment
    from alf.trainers.policy_trainer import create_algorithm
    from alf.utils import common

    common.parse_conf_file(os.path.join(CONFS, conf), [], list(gin_params))
    config = TrainerConfig()
    env = create_environment(num_parallel_environments=1, nonparallel=True, seed=0)
    try:
        return create_algorithm(config, env), env.observation_spec()
    finally:
        env.close()


@pytest.mark.parametrize(
    "conf, gin_params",
    [
        ("sac_pendulum_conf.py", []),
        ("dqn_cart_pole_conf.py", []),
        ("ac_cart_pole_conf.py", []),
        ("td3_halfcheetah_conf.py", ["create_environment.env_name = 'Pendulum-v1'"]),
    ],
)
def test_other_algorithms_export(tmp_path, conf, gin_params):
    """SAC (tanh-squashed normal), DQN (argmax of Q), A2C, TD3 (a deterministic actor),
    untrained: every format gives the eager policy's actions."""
    algorithm, spec = _algorithm(os.path.join(REPO, "alf", "examples", conf), *gin_params)
    policy = policy_export.ExportablePolicy(algorithm, spec)
    leaves = policy_export.sample_observations(policy.input_specs, 256, seed=5)
    formats = [("torchscript", ".pt"), ("torch_export", ".pt2")]
    formats += [("onnx", ".onnx")] if HAS_ONNX else []
    for fmt, ext in formats:
        path = str(tmp_path / f"policy{ext}")
        policy_export.export(policy, path, fmt)
        assert policy_export.compare(policy, policy_export.LoadedPolicy(path), leaves) <= 1e-5


def test_refused_policies():
    algorithm, spec = _algorithm("tiny_ppo_conf.py", "TrainerConfig.epsilon_greedy = 0.1")
    with pytest.raises(
        policy_export.ExportError, match="epsilon_greedy=0.1; export the greedy policy with"
    ):
        policy_export.ExportablePolicy(algorithm, spec)


@pytest.mark.parametrize(
    "params, state_names",
    [
        (
            [
                "PPOAlgorithm.actor_network_ctor = @ActorDistributionRNNNetwork",
                "PPOAlgorithm.value_network_ctor = @ValueRNNNetwork",
            ],
            ["state.policy.actor.0.0", "state.policy.actor.0.1"],
        ),
        (["TrainerConfig.data_transformer_ctor = [@FrameStacker]"], ["state.frame_stack"]),
    ],
)
def test_recurrent_and_frame_stacked_policies_take_their_state(params, state_names):
    """They export with the state as inputs (``tests/bin/test_export_stateful.py``)."""
    algorithm, spec = _algorithm("tiny_ppo_conf.py", *params)
    policy = policy_export.ExportablePolicy(algorithm, spec)
    assert policy.input_names == ["observation", "step_type"] + state_names
    assert policy.output_names == ["action"] + ["new_" + n for n in state_names]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--output", "{tmp}/p.pt"], "--root_dir is required"),
        (["--root_dir", "{tmp}/none", "--output", "{tmp}/p.pt"], "does not exist"),
        (["--root_dir", "{tmp}", "--output", "{tmp}/p.pt"], "holds no training run"),
        (["--root_dir", "{run}"], "--output is required"),
        (["--root_dir", "{run}", "--output", "{tmp}/p.zip"], "cannot tell the format"),
        (["--root_dir", "{run}", "--output", "{tmp}/p.pt", "--format", "tf"], "--format must"),
        (["--root_dir", "{run}", "--output", "/nonexistent/p.pt"], "directory of --output"),
        (["--root_dir", "{run}", "--output", "{tmp}/p.pt", "--checkpoint_step", "99"], "ckpt-99"),
        (["--root_dir", "{run}", "--output", "{tmp}/p.pt", "--verify", "-1"], "--verify must"),
        (
            ["--root_dir", "{run}", "--output", "{tmp}/p.pt", "--conf_param", "PPOLoss.gama=1"],
            "gama",
        ),
        (
            [
                "--root_dir",
                "{run}",
                "--output",
                "{tmp}/p.pt",
                "--conf_param",
                "TrainerConfig.epsilon_greedy=0.1",
            ],
            "cannot export PPOAlgorithm: its predict_step takes a random action",
        ),
    ],
)
def test_bad_input_is_one_line(runs, tmp_path, args, message):
    args = [a.format(tmp=tmp_path, run=runs["cart_pole"]) for a in args]
    code, _, stderr = _export(*args)
    assert code == 2, stderr[-3000:]
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("alf.bin.export: error: ")
    assert message in lines[0]
    assert not os.path.exists(tmp_path / "p.pt") and not os.path.exists(tmp_path / "p.zip")
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp-export-")]
