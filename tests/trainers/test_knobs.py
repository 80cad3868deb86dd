"""The PPO knobs of ``docs/ppo_knobs.md`` whose effect is not a plain pass-through.

Checks: separate actor and critic optimizers (learning rate, Adam epsilon) update
only their own network; ``TrainerConfig.num_threads`` (``--num_threads``) sets
torch's intra-op thread count; ``flush_denormal``, ``keep_freed_memory`` and
``matmul_precision`` set the process's arithmetic and allocator.
"""

import os

import pytest
import torch

import alf
from alf.algorithms.config import TrainerConfig
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.optimizers import Adam
from alf.trainers.policy_trainer import PolicyTrainer
from alf.utils import common, seeding
from tests.algorithms.algorithm_test_utils import counting_env, make_algorithm, parameters_of

TINY_CONF = os.path.join(os.path.dirname(__file__), "..", "confs", "tiny_ppo_conf.py")


def _changed(before: dict, after: dict, prefix: str) -> list:
    return [k for k in before if k.startswith(prefix) and not torch.equal(before[k], after[k])]


@pytest.mark.parametrize("frozen, trained", [("_actor", "_value"), ("_value", "_actor")])
def test_actor_and_critic_optimizers_update_only_their_network(frozen, trained):
    seeding.set_random_seed(0)
    env = counting_env(num_envs=4, seed=0)
    lr_eps = {frozen: (0.0, 1e-3), trained: (1e-2, 1e-5)}
    config = TrainerConfig(
        unroll_length=10,
        mini_batch_size=20,
        mini_batch_length=1,
        num_updates_per_train_iter=2,
        replay_buffer_length=10,
    )
    try:
        alg = make_algorithm(
            PPOAlgorithm,
            env,
            config,
            loss=PPOLoss(gamma=0.9, entropy_regularization=0.01),
            actor_optimizer=Adam(lr=lr_eps["_actor"][0], eps=lr_eps["_actor"][1]),
            value_optimizer=Adam(lr=lr_eps["_value"][0], eps=lr_eps["_value"][1]),
        )
        # the module-specific optimizers claim every parameter before the default one
        groups = [g for _, opt, _ in alg.optimizers() for g in opt.param_groups]
        assert [(g["lr"], g["eps"]) for g in groups] == [lr_eps["_actor"], lr_eps["_value"]]
        before = parameters_of(alg)
        alg.train_iter()
        after = parameters_of(alg)
    finally:
        env.close()
    assert not _changed(before, after, f"{frozen}_network")
    assert _changed(before, after, f"{trained}_network")


def _build_and_close_trainer(tmp_path, *params: str) -> None:
    """Build ``PolicyTrainer`` on the tiny conf with ``params`` (the process settings it
    makes stay after it is closed), then close it."""
    alf.reset_configs()
    try:
        root = f"TrainerConfig.root_dir={str(tmp_path)!r}"
        common.parse_conf_file(TINY_CONF, [*params, root])
        PolicyTrainer(TrainerConfig()).close()
    finally:
        alf.reset_configs()


def test_num_threads_sets_torch_threads(tmp_path):
    previous = torch.get_num_threads()
    try:
        _build_and_close_trainer(tmp_path, "TrainerConfig.num_threads=2")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)


@pytest.mark.parametrize("flush", [True, False])
def test_flush_denormal_sets_cpu_arithmetic(tmp_path, flush):
    subnormal = torch.tensor(1e-39)  # below float32's smallest normal, 1.18e-38
    try:
        _build_and_close_trainer(tmp_path, f"TrainerConfig.flush_denormal={flush}")
        product = float(subnormal * 1.0)
    finally:
        torch.set_flush_denormal(False)
    assert (product == 0.0) == flush


@pytest.mark.parametrize("keep", [True, False])
def test_keep_freed_memory_sets_the_allocator(tmp_path, monkeypatch, keep):
    from alf.utils import malloc

    calls = []
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda: calls.append(1) or True)
    _build_and_close_trainer(tmp_path, f"TrainerConfig.keep_freed_memory={keep}")
    assert len(calls) == int(keep)


def test_matmul_precision_sets_torch_and_bad_values_name_the_key(tmp_path):
    try:
        _build_and_close_trainer(tmp_path, "TrainerConfig.matmul_precision='medium'")
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match=r"TrainerConfig.matmul_precision must be one of"):
        TrainerConfig(root_dir=str(tmp_path), matmul_precision="bf16")
