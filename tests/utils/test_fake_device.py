"""The device is handled in one place (``alf.utils.device``): a check without a GPU.

Each algorithm acts on a real environment on the CPU, then the algorithm and the unrolled
data move to torch's ``meta`` device (tensors with shapes but no data) and the learner's
whole path runs there: preprocessing, the losses, backward, gradient clipping, the
optimizer steps and the target-network updates, then a rollout and a predict step. A
tensor made on the CPU inside that path and mixed with the device's tensors raises
("Tensor on device cpu is not on the expected device meta"), as it would on CUDA. The
host syncs the learner makes (the finiteness check of each update, DDPG's update counter)
read 0 here: meta tensors have no values. The optimizer is ``AdamTF``, alf's own: torch's
fused Adam kernels exist for the CPU and CUDA but not for ``meta``.
"""

import pytest
import torch

import alf.nest as nest
from alf.algorithms.config import TrainerConfig
from alf.algorithms.ddpg_algorithm import DdpgAlgorithm, Td3Algorithm
from alf.algorithms.dqn_algorithm import DqnAlgorithm
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.sac_algorithm import SacAlgorithm
from alf.environments.utils import create_environment
from alf.learners.unroller import AlgorithmPolicy, Unroller
from alf.optimizers import AdamTF
from alf.utils import device

META = torch.device("meta")
CASES = {
    "ppo": (PPOAlgorithm, "CartPole-v1"),
    "sac": (SacAlgorithm, "Pendulum-v1"),
    "discrete_sac": (SacAlgorithm, "CartPole-v1"),
    "ddpg": (DdpgAlgorithm, "Pendulum-v1"),
    "td3": (Td3Algorithm, "Pendulum-v1"),
    "dqn": (DqnAlgorithm, "CartPole-v1"),
}


@pytest.fixture
def meta_host_syncs(monkeypatch):
    """``float()``, ``int()`` and ``bool()`` of a meta tensor give 0 instead of raising."""
    for name, zero in (("__float__", 0.0), ("__int__", 0), ("__bool__", False)):
        original = getattr(torch.Tensor, name)
        monkeypatch.setattr(
            torch.Tensor, name, lambda t, o=original, z=zero: z if t.is_meta else o(t)
        )
    yield
    device.set_device("cpu")


@pytest.mark.parametrize("case", list(CASES))
def test_the_learner_and_the_policy_run_on_another_device(case, meta_host_syncs):
    cls, env_name = CASES[case]
    env = create_environment(env_name, num_parallel_environments=2, nonparallel=True, seed=0)
    try:
        config = TrainerConfig(
            unroll_length=4,
            mini_batch_size=2,
            mini_batch_length=2,
            num_updates_per_train_iter=1,
            initial_collect_steps=0,
        )
        algorithm = cls(
            observation_spec=env.observation_spec(),
            action_spec=env.action_spec(),
            reward_spec=env.reward_spec(),
            env=env,
            config=config,
            optimizer=AdamTF(lr=1e-3),  # torch's fused Adam refuses meta (not CUDA)
        )
        unroll = Unroller(AlgorithmPolicy(algorithm, "rollout"), env).unroll(
            4, raw=True, bootstrap=algorithm.learner.needs_bootstrap_row()
        )
    finally:
        env.close()
    rows = list(unroll.experiences) + [unroll.bootstrap] * (unroll.bootstrap is not None)
    experience = nest.map_structure(lambda *xs: torch.stack(xs), *rows)

    device.set_device(META)
    algorithm.to(META)
    experience = algorithm.preprocess_experience(device.to_device(experience))
    if unroll.bootstrap is not None:
        experience = nest.map_structure(lambda x: x[:-1], experience)
    algorithm.update_from_experience(experience)
    algorithm.after_train_iter(experience)

    state = algorithm.state_dict()
    assert state and all(t.is_meta for t in state.values() if isinstance(t, torch.Tensor))
    for _, optimizer, _ in algorithm.optimizers():
        for per_param in optimizer.state.values():
            assert all(t.is_meta for t in per_param.values() if isinstance(t, torch.Tensor))
    time_step = nest.map_structure(lambda x: x[0], experience.time_step)
    for step, mode in ((algorithm.rollout_step, "rollout"), (algorithm.predict_step, "predict")):
        initial = getattr(algorithm, f"get_initial_{mode}_state")(2)
        output = step(time_step, device.to_device(initial)).output
        assert all(t.is_meta for t in nest.flatten(output)), mode
