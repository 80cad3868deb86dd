"""``PolicyTrainer`` in this process, on the tiny PPO CartPole conf (a second per run).

Checks: checkpoint layout and counters, same seed → same parameters, exact resume
(also when the resuming process is given another seed), fallback to the previous
checkpoint when the newest is corrupt (never a restart from scratch), SIGTERM →
checkpoint and a normal return, and ``create_algorithm`` rebuilding a trained
algorithm from a checkpoint.
"""

import logging
import os
import shutil
import signal

import pytest
import torch

import alf
from alf.algorithms.config import TrainerConfig
from alf.environments.utils import create_environment
from alf.trainers.policy_trainer import PolicyTrainer, create_algorithm
from alf.utils import common

TINY_CONF = os.path.join(os.path.dirname(__file__), "..", "confs", "tiny_ppo_conf.py")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_trainer(root_dir, *conf_params):
    """A ``PolicyTrainer`` for the tiny conf in ``root_dir`` (conf params override it)."""
    alf.reset_configs()
    params = [*conf_params, f"TrainerConfig.root_dir={str(root_dir)!r}"]
    common.parse_conf_file(TINY_CONF, params)
    return PolicyTrainer(TrainerConfig())


def ckpt_dir(root_dir):
    return os.path.join(root_dir, "train", "algorithm")


def load_ckpt(root_dir, step):
    return torch.load(
        os.path.join(ckpt_dir(root_dir), f"ckpt-{step}.pt"), map_location="cpu", weights_only=True
    )


def assert_same_tensors(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            assert_same_tensors(a[key], b[key])
        elif isinstance(a[key], torch.Tensor):
            assert torch.equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


def params_of(trainer):
    return {
        k: v.detach().clone()
        for k, v in trainer.algorithm.state_dict().items()
        if isinstance(v, torch.Tensor)
    }


@pytest.fixture(autouse=True)
def clean_configs():
    """A clean configuration registry; torch's thread count restored (the trainer sets it)."""
    num_threads = torch.get_num_threads()
    alf.reset_configs()
    yield
    alf.reset_configs()
    torch.set_num_threads(num_threads)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """The uninterrupted 16-iteration run (seed 5): ``root_dir``."""
    root_dir = tmp_path_factory.mktemp("full")
    trainer = make_trainer(root_dir, "TrainerConfig.random_seed=5")
    trainer.train()
    alf.reset_configs()
    return str(root_dir)


def test_checkpoints_and_counters(full_run):
    names = sorted(os.listdir(ckpt_dir(full_run)))
    # every 4 iterations, newest 3 kept (keep_checkpoints), plus the best eval
    assert names == ["ckpt-12.pt", "ckpt-16.pt", "ckpt-8.pt", "ckpt-best.pt"]
    state = load_ckpt(full_run, 16)
    assert state["iteration"] == 16
    assert state["env_steps"] == 16 * 2 * 16  # iterations x envs x unroll_length
    assert state["random_seed"] == 5
    assert os.listdir(os.path.join(full_run, "train"))
    assert any(n.startswith("events.") for n in os.listdir(os.path.join(full_run, "eval")))


def test_same_seed_same_parameters_different_seed_differs(tmp_path):
    def final_params(name, seed):
        trainer = make_trainer(
            tmp_path / name,
            f"TrainerConfig.random_seed={seed}",
            "TrainerConfig.num_iterations=3",
            "TrainerConfig.evaluate=False",
        )
        trainer.train()
        return params_of(trainer)

    first, again, other = final_params("a", 3), final_params("b", 3), final_params("c", 4)
    assert_same_tensors(first, again)
    assert any(not torch.equal(first[k], other[k]) for k in first)


def test_resume_matches_uninterrupted_run_even_with_another_seed(full_run, tmp_path, caplog):
    root_dir = tmp_path / "resumed"
    make_trainer(root_dir, "TrainerConfig.random_seed=5", "TrainerConfig.num_iterations=8").train()
    assert load_ckpt(root_dir, 8)["iteration"] == 8
    caplog.set_level(logging.INFO)
    trainer = make_trainer(root_dir, "TrainerConfig.random_seed=99")
    trainer.train()
    assert "Resumed from iteration 8" in caplog.text
    assert "run's random seed 5 instead of 99" in caplog.text
    assert trainer.iteration == 16
    resumed, full = load_ckpt(root_dir, 16), load_ckpt(full_run, 16)
    assert_same_tensors(resumed["algorithm"], full["algorithm"])
    assert_same_tensors(resumed["metrics"], full["metrics"])
    assert resumed["env_steps"] == full["env_steps"]


def test_corrupt_newest_checkpoint_falls_back_to_previous(full_run, tmp_path, caplog):
    root_dir = tmp_path / "corrupt"
    shutil.copytree(full_run, root_dir)
    with open(os.path.join(ckpt_dir(root_dir), "ckpt-16.pt"), "r+b") as f:
        f.write(b"\0garbage" * 64)
    caplog.set_level(logging.INFO)
    trainer = make_trainer(root_dir, "TrainerConfig.num_iterations=20")
    trainer.train()
    assert "ckpt-16.pt cannot be loaded safely" in caplog.text
    assert "falling back to the previous checkpoint" in caplog.text
    assert "Resumed from iteration 12" in caplog.text
    assert trainer.iteration == 20
    assert load_ckpt(root_dir, 20)["env_steps"] == 20 * 2 * 16


def test_no_readable_checkpoint_raises_instead_of_starting_over(full_run, tmp_path):
    root_dir = tmp_path / "all_corrupt"
    shutil.copytree(full_run, root_dir)
    for step in (8, 12, 16):
        with open(os.path.join(ckpt_dir(root_dir), f"ckpt-{step}.pt"), "wb") as f:
            f.write(b"not a checkpoint")
    before = sorted(os.listdir(ckpt_dir(root_dir)))
    with pytest.raises(ValueError, match="None of the checkpoints"):  # at construction
        make_trainer(root_dir, "TrainerConfig.num_iterations=20")
    assert sorted(os.listdir(ckpt_dir(root_dir))) == before


def test_sigterm_saves_a_checkpoint_and_returns(tmp_path):
    trainer = make_trainer(tmp_path, "TrainerConfig.num_iterations=1000")
    train_iter = trainer.algorithm.train_iter
    calls = []

    def train_iter_then_signal():
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return train_iter()

    trainer.algorithm.train_iter = train_iter_then_signal
    previous = signal.getsignal(signal.SIGTERM)
    trainer.train()
    assert trainer.iteration == 3
    assert load_ckpt(tmp_path, 3)["iteration"] == 3
    assert signal.getsignal(signal.SIGTERM) is previous


def test_create_algorithm_rebuilds_a_trained_policy(full_run):
    trainer_state = load_ckpt(full_run, 16)["algorithm"]
    alf.reset_configs()
    common.parse_conf_file(TINY_CONF, [f"TrainerConfig.root_dir={full_run!r}"])
    env = create_environment(num_parallel_environments=1, nonparallel=True, seed=0)
    try:
        algorithm = create_algorithm(TrainerConfig(), env)
        algorithm.load_state_dict(trainer_state)
        assert_same_tensors(
            {k: v for k, v in algorithm.state_dict().items() if isinstance(v, torch.Tensor)},
            {k: v for k, v in trainer_state.items() if isinstance(v, torch.Tensor)},
        )
    finally:
        env.close()


def test_resume_with_another_seed_keeps_the_stratified_minibatches(tmp_path):
    # minibatches of 8 pieces of 4 steps from 4 envs: EnvStratifiedShuffle, keyed by the
    # run's seed, which the resumed trainer adopts from the checkpoint
    shuffled = [
        "create_environment.num_parallel_environments=4",
        "TrainerConfig.mini_batch_length=4",
        "TrainerConfig.mini_batch_size=8",
        "TrainerConfig.evaluate=False",
    ]
    full = make_trainer(tmp_path / "full", "TrainerConfig.random_seed=5", *shuffled)
    full.train()
    root_dir = tmp_path / "resumed"
    make_trainer(
        root_dir, "TrainerConfig.random_seed=5", "TrainerConfig.num_iterations=8", *shuffled
    ).train()
    make_trainer(root_dir, "TrainerConfig.random_seed=99", *shuffled).train()
    resumed, expected = load_ckpt(root_dir, 16), load_ckpt(tmp_path / "full", 16)
    assert_same_tensors(resumed["algorithm"], expected["algorithm"])
