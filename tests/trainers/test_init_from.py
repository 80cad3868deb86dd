"""``TrainerConfig.init_from``: a new run starts from another run's weights.

Checks: at iteration 0 the new algorithm gives the same outputs on a fixed batch as
the earlier run's final checkpoint, with fresh optimizers and counters; the earlier
run's files are byte-for-byte unchanged, also after the new run has trained; the
data transformers' state is taken only with ``init_from_normalizers``; a root_dir
with its own checkpoint resumes and ignores ``init_from``; a shape mismatch, missing
or unexpected parameters and a bad path raise ``InitFromError`` naming them.
"""

import hashlib
import logging
import os

import pytest
import torch

import alf
from alf.algorithms.config import TrainerConfig
from alf.data_transformers import DataTransformer
from alf.trainers.policy_trainer import PolicyTrainer
from alf.utils import common
from alf.utils.init_from import InitFromError

TINY_CONF = os.path.join(os.path.dirname(__file__), "..", "confs", "tiny_ppo_conf.py")
SHORT = ("TrainerConfig.num_iterations=4", "TrainerConfig.evaluate=False")


class StepCounter(DataTransformer):
    """Counts the time steps it transformed (state standing in for normalizer statistics)."""

    def __init__(self, observation_spec):
        super().__init__(observation_spec)
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))

    def transform_timestep(self, time_step, state):
        self.count += time_step.step_type.shape[0]
        return time_step, state

    def transform_experience(self, experience):
        return experience


def make_trainer(root_dir, *conf_params, counter=False):
    alf.reset_configs()
    if counter:
        alf.config("TrainerConfig", data_transformer_ctor=StepCounter)
    params = [*conf_params, f"TrainerConfig.root_dir={str(root_dir)!r}"]
    common.parse_conf_file(TINY_CONF, params)
    return PolicyTrainer(TrainerConfig())


def tree_hashes(root_dir):
    hashes = {}
    for directory, _, names in os.walk(root_dir):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                hashes[os.path.relpath(path, root_dir)] = hashlib.sha256(f.read()).hexdigest()
    return hashes


def outputs(algorithm, observation):
    """Action logits and values of ``algorithm`` on ``observation`` ``[B, 4]``."""
    state = algorithm.get_initial_rollout_state(observation.shape[0])
    with torch.no_grad():
        dist, _ = algorithm.actor_network(observation, state.actor)
        value, _ = algorithm.value_network(observation, state.value)
    return dist.logits, value


def module_tensors(state):
    return {
        k: v
        for k, v in state.items()
        if isinstance(v, torch.Tensor) and not k.startswith("_optimizers.")
    }


@pytest.fixture(autouse=True)
def clean_configs():
    num_threads = torch.get_num_threads()
    alf.reset_configs()
    yield
    alf.reset_configs()
    torch.set_num_threads(num_threads)


@pytest.fixture(scope="module")
def source_run(tmp_path_factory):
    """A finished 4-iteration run with a step-counting data transformer: ``root_dir``."""
    root_dir = tmp_path_factory.mktemp("source")
    make_trainer(root_dir, *SHORT, counter=True).train()
    alf.reset_configs()
    return str(root_dir)


def final_checkpoint(root_dir):
    path = os.path.join(root_dir, "train", "algorithm", "ckpt-4.pt")
    return torch.load(path, map_location="cpu", weights_only=True)


def test_starts_from_the_source_weights_and_leaves_the_source_untouched(source_run, tmp_path):
    before = tree_hashes(source_run)
    source = final_checkpoint(source_run)["algorithm"]
    assert int(source["_data_transformer.count"]) > 0
    fresh = make_trainer(tmp_path / "fresh", *SHORT, counter=True)
    trainer = make_trainer(
        tmp_path / "new", *SHORT, f"TrainerConfig.init_from={source_run!r}", counter=True
    )
    assert trainer.init_from_checkpoint.endswith(os.path.join("train", "algorithm", "ckpt-4.pt"))
    assert trainer.iteration == 0
    observation = torch.linspace(-1.0, 1.0, 5 * 4).reshape(5, 4)
    fresh_logits, _ = outputs(fresh.algorithm, observation)
    reference = create_from_state(fresh.algorithm, source)
    logits, values = outputs(trainer.algorithm, observation)
    ref_logits, ref_values = outputs(reference, observation)
    assert torch.equal(logits, ref_logits) and torch.equal(values, ref_values)
    assert not torch.allclose(logits, fresh_logits)
    new_state = module_tensors(trainer.algorithm.state_dict())
    for name, value in module_tensors(source).items():
        assert torch.equal(new_state[name], value), name
    # optimizers start fresh: no Adam moments yet
    assert all(not opt.state for _, opt, _ in trainer.algorithm.optimizers())
    trainer.train()
    assert trainer.iteration == 4
    assert tree_hashes(source_run) == before


def create_from_state(algorithm, state):
    """``algorithm`` after loading ``state`` (a trainer's algorithm from the same conf)."""
    algorithm.load_state_dict(state)
    return algorithm


def test_data_transformer_state_only_with_init_from_normalizers(source_run, tmp_path):
    count = final_checkpoint(source_run)["algorithm"]["_data_transformer.count"]
    init = f"TrainerConfig.init_from={source_run!r}"
    taken = make_trainer(tmp_path / "taken", *SHORT, init, counter=True)
    assert torch.equal(taken.algorithm.data_transformer.count, count)
    skipped = make_trainer(
        tmp_path / "skipped",
        *SHORT,
        init,
        "TrainerConfig.init_from_normalizers=False",
        counter=True,
    )
    assert int(skipped.algorithm.data_transformer.count) == 0
    name = "_actor_network._encoding_net._fc_layers.0._weight"
    source = final_checkpoint(source_run)["algorithm"][name]
    assert torch.equal(skipped.algorithm.state_dict()[name], source)


def test_own_checkpoint_wins_over_init_from(source_run, tmp_path, caplog):
    root_dir = tmp_path / "own"
    make_trainer(root_dir, "TrainerConfig.num_iterations=2", "TrainerConfig.evaluate=False").train()
    caplog.set_level(logging.INFO)
    trainer = make_trainer(
        root_dir, *SHORT, f"TrainerConfig.init_from={source_run!r}", "TrainerConfig.random_seed=1"
    )
    assert "ignoring init_from" in caplog.text
    assert trainer.init_from_checkpoint is None
    source = module_tensors(final_checkpoint(source_run)["algorithm"])
    state = trainer.algorithm.state_dict()
    assert not any(torch.equal(state[k], v) for k, v in source.items() if v.numel() > 1)
    trainer.train()
    assert "Resumed from iteration 2" in caplog.text
    assert trainer.iteration == 4


def test_init_from_a_checkpoint_file_or_directory(source_run, tmp_path):
    ckpt = os.path.join(source_run, "train", "algorithm", "ckpt-4.pt")
    init = f"TrainerConfig.init_from={ckpt!r}"
    trainer = make_trainer(tmp_path / "file", *SHORT, init, counter=True)
    assert trainer.init_from_checkpoint == ckpt
    init = f"TrainerConfig.init_from={os.path.dirname(ckpt)!r}"
    trainer = make_trainer(tmp_path / "dir", *SHORT, init, counter=True)
    assert trainer.init_from_checkpoint == ckpt
    with pytest.raises(InitFromError, match="not in the new algorithm: _data_transformer.count"):
        make_trainer(tmp_path / "no_counter", *SHORT, init)
    trainer = make_trainer(
        tmp_path / "no_counter", *SHORT, init, "TrainerConfig.init_from_normalizers=False"
    )
    assert trainer.init_from_checkpoint == ckpt


def test_best_checkpoint(tmp_path):
    source = tmp_path / "source"
    make_trainer(source, "TrainerConfig.num_iterations=4").train()  # evaluates at 4
    best = os.path.join(source, "train", "algorithm", "ckpt-best.pt")
    trainer = make_trainer(tmp_path / "new", *SHORT, f"TrainerConfig.init_from={best!r}")
    assert trainer.init_from_checkpoint == best
    state = torch.load(best, weights_only=True)["algorithm"]
    new_state = trainer.algorithm.state_dict()
    for name, value in module_tensors(state).items():
        assert torch.equal(new_state[name], value), name


def test_shape_mismatch_names_the_parameter_and_both_shapes(source_run, tmp_path):
    with pytest.raises(InitFromError) as info:
        make_trainer(
            tmp_path / "acrobot",
            *SHORT,
            "create_environment.env_name='Acrobot-v1'",
            f"TrainerConfig.init_from={source_run!r}",
            counter=True,
        )
    message = str(info.value)
    assert "\n" not in message
    # Acrobot has 6 observations and 3 actions, CartPole 4 and 2; the first (sorted) differs
    assert "'_actor_network._encoding_net._fc_layers.0._weight'" in message
    assert "(64, 4) in checkpoint" in message and "(64, 6) in the new algorithm" in message
    assert "ckpt-4.pt" in message
    assert not os.path.exists(tmp_path / "acrobot")


def test_missing_and_unexpected_parameters_are_listed(source_run, tmp_path):
    state = final_checkpoint(source_run)
    algorithm = dict(state["algorithm"])
    algorithm["_value_network.extra.weight"] = torch.zeros(3)
    del algorithm["_actor_network._encoding_net._fc_layers.0._bias"]
    edited = tmp_path / "edited.pt"
    torch.save(dict(state, algorithm=algorithm), edited)
    with pytest.raises(InitFromError) as info:
        make_trainer(
            tmp_path / "new", *SHORT, f"TrainerConfig.init_from={str(edited)!r}", counter=True
        )
    message = str(info.value)
    assert "missing in the checkpoint: _actor_network._encoding_net._fc_layers.0._bias" in message
    assert "not in the new algorithm: _value_network.extra.weight" in message
    assert str(edited) in message


@pytest.mark.parametrize(
    "make_path, expected",
    [
        (lambda d: d / "no_such_run", "does not exist"),
        (lambda d: d, "holds no checkpoint"),
        (lambda d: _write(d / "garbage.pt", b"not a checkpoint"), "cannot be loaded safely"),
    ],
)
def test_bad_path_raises_before_anything_is_written(tmp_path, make_path, expected):
    source = tmp_path / "src"
    source.mkdir()
    path = make_path(source)
    with pytest.raises(InitFromError, match=expected):
        make_trainer(tmp_path / "new", *SHORT, f"TrainerConfig.init_from={str(path)!r}")
    assert not os.path.exists(tmp_path / "new")


def _write(path, content):
    path.write_bytes(content)
    return path
