"""The example confs written in ALF's layer language: a ``Sequential`` of ``FC`` layers
computes what ``EncodingNetwork`` does (the same training, bit for bit, from the same
weights), a conv+FC ``Sequential`` encoder learns an image task, and an ``LSTMCell``
container learns the memory task."""

import os

import pytest
import torch

import alf
from alf.algorithms.config import TrainerConfig
from alf.environments.utils import create_environment
from alf.trainers.policy_trainer import PolicyTrainer
from alf.utils import common
from tests.algorithms.algorithm_test_utils import evaluate

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "alf", "examples")


@pytest.fixture(autouse=True)
def _fresh_configs():
    alf.reset_configs()
    yield
    alf.reset_configs()


def _algorithm(conf: str, root_dir, seed: int = 0):
    alf.reset_configs()
    params = [f"TrainerConfig.root_dir={str(root_dir)!r}", f"TrainerConfig.random_seed={seed}"]
    params.append("TrainerConfig.evaluate=False")
    common.parse_conf_file(os.path.join(EXAMPLES, conf), params, [])
    return PolicyTrainer(TrainerConfig()).algorithm


def test_layer_language_cart_pole_trains_as_the_encoding_network_conf(tmp_path):
    reference = _algorithm("ppo_cart_pole_conf.py", tmp_path / "a")
    layers = _algorithm("ppo_layers_cart_pole_conf.py", tmp_path / "b")
    pairs = list(zip(reference.parameters(), layers.parameters()))
    assert len(pairs) == 12 and all(p.shape == q.shape for p, q in pairs)
    with torch.no_grad():
        for p, q in pairs:
            q.copy_(p)
    before = [p.detach().clone() for p, _ in pairs]
    for alg in (reference, layers):
        torch.manual_seed(5)  # the same action samples
        for _ in range(2):
            alg.train_iter()
    assert all(torch.equal(p, q) for p, q in pairs)
    assert all(not torch.equal(p, b) for (p, _), b in zip(pairs, before))  # it trained


def _train_and_evaluate(conf, root_dir, env_name, iterations, seed=0, episodes=32):
    alg = _algorithm(conf, root_dir, seed)
    for _ in range(iterations):
        alg.train_iter()
    env = create_environment(
        env_name=env_name, num_parallel_environments=8, nonparallel=True, seed=seed + 100
    )
    try:
        return evaluate(alg, env, num_episodes=episodes)
    finally:
        env.close()


def test_conv_sequential_encoder_learns_the_image_cue(tmp_path):
    # 40 iterations x 8 envs x 16 steps = 5,120 env steps; the optimum is 8, guessing 4
    score = _train_and_evaluate(
        "ppo_layers_image_conf.py", tmp_path, "alf.environments.toy_envs:ImageCueEnv-v0", 40
    )
    assert score >= 7.0


def test_lstm_cell_container_learns_the_memory_task(tmp_path):
    import alf.environments.memory_env  # noqa: F401 (registers the id)

    # 40 iterations x 16 envs x 20 steps = 12,800 env steps; the optimum is 1, guessing 0
    score = _train_and_evaluate(
        "ppo_layers_memory_conf.py",
        tmp_path,
        "alf.environments.memory_env:RepeatFirstObservation-v0",
        40,
    )
    assert score >= 0.9
