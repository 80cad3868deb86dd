"""Training on CUDA, checked by its numbers (skipped where torch sees no GPU).

- The first updates of PPO (tiny CartPole conf) and SAC (the Pendulum example's networks)
  on CUDA match the same updates on the CPU: same seed, same unrolled data, the real
  learner path (``learner.train``). Random draws inside an update come from the CPU
  generator on both sides: PPO's minibatch permutation and the replay sampling already do;
  SAC's reparameterization noise (``torch.randn_like``) is drawn on the CPU and moved (a
  CUDA generator gives other numbers for the same seed).
- TF32 is off: ``TrainerConfig.matmul_precision`` is ``'highest'`` by default, so cuBLAS
  multiplies in float32 (asserted below); no convolution runs. What is left is float32
  rounding in another summation order, hence the tolerances: the loss within a relative
  1e-5, each gradient within 1e-4 of its tensor's largest entry. A parameter's Adam step is
  ``lr * g / (|g| + eps)``: where ``|g|`` is near ``eps`` it magnifies rounding, so the
  steps are compared by their median difference (below 1% of ``lr``), and the loss of a
  second update, made after the first step, must agree within 1e-4.
- A few PPO iterations on CUDA: parameters and optimizer state on CUDA, losses finite, and
  the same seed twice gives bit-identical parameters (these networks use no atomic
  accumulation, so CUDA is deterministic for them).
- A checkpoint of a CUDA run (``alf.bin.train``) holds CUDA tensors, resumes on the CPU
  with exactly its parameters, and plays on the CPU as on CUDA.
"""

import os
import subprocess
import sys

import pytest
import torch

import alf
from alf.algorithms.config import TrainerConfig
from alf.bin.play import build_experiment, play_episodes
from alf.environments.utils import create_environment
from alf.learners.unroller import AlgorithmPolicy, Unroller
from alf.trainers.policy_trainer import PolicyTrainer, create_algorithm
from alf.utils import common, device, seeding

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CUDA = torch.device("cuda")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY_PPO = os.path.join(REPO, "tests", "confs", "tiny_ppo_conf.py")
SAC_PENDULUM = os.path.join(REPO, "alf", "examples", "sac_pendulum_conf.py")
CASES = {
    # one update per learner.train: the whole unroll (2 envs x 16 steps) is the minibatch
    "ppo": (TINY_PPO, ["TrainerConfig.mini_batch_size=32"]),
    "sac": (
        SAC_PENDULUM,
        [
            "TrainerConfig.initial_collect_steps=0",
            "TrainerConfig.unroll_length=8",
            "TrainerConfig.mini_batch_size=64",
            "TrainerConfig.replay_buffer_length=64",
        ],
    ),
}


@pytest.fixture(autouse=True)
def clean_state():
    """A clean registry, the CPU as the device and torch's thread count, before and after."""
    num_threads = torch.get_num_threads()
    alf.reset_configs()
    yield
    alf.reset_configs()
    device.set_device("cpu")
    torch.set_num_threads(num_threads)


def cpu_randn_like(monkeypatch):
    """``torch.randn_like`` drawing from the CPU generator, then moved to the input's device."""
    original = torch.randn_like

    def randn_like(x, **kwargs):
        return original(x, device="cpu", **kwargs).to(x.device)

    monkeypatch.setattr(torch, "randn_like", randn_like)


def build(env):
    """The configured algorithm for ``env``, built on the CPU from seed 0."""
    seeding.set_random_seed(0)
    return create_algorithm(TrainerConfig(), env)


def recorded_losses(algorithm):
    """Record the ``LossInfo`` of each ``update_from_experience`` of ``algorithm``."""
    losses, update = [], algorithm.update_from_experience

    def recording(*args, **kwargs):
        losses.append(update(*args, **kwargs))
        return losses[-1]

    algorithm.update_from_experience = recording
    return losses


def train_twice(algorithm, unroll, on):
    """Two ``learner.train`` calls on ``unroll`` on device ``on``, each from seed 1:
    ``(losses, gradients after the first, parameter steps of the first)``."""
    device.set_device(on)
    algorithm.to(on)
    if not algorithm.learner.raw_experience:  # on-policy: the actor moved it to the device
        unroll = unroll._replace(
            experiences=device.to_device(unroll.experiences, on),
            bootstrap=device.to_device(unroll.bootstrap, on),
        )
    losses = recorded_losses(algorithm)
    before = {n: p.detach().cpu().clone() for n, p in algorithm.named_parameters()}
    seeding.seed_generators(1)
    algorithm.learner.train(unroll)
    grads = {n: p.grad.cpu() for n, p in algorithm.named_parameters() if p.grad is not None}
    steps = {n: p.detach().cpu() - before[n] for n, p in algorithm.named_parameters()}
    seeding.seed_generators(1)
    algorithm.learner.train(unroll)
    assert len(losses) == 2
    return [float(x.loss) for x in losses], grads, steps


def lr_of(algorithm):
    return max(g["lr"] for _, opt, _ in algorithm.optimizers() for g in opt.param_groups)


@pytest.mark.parametrize("case", list(CASES))
def test_first_updates_on_cuda_match_the_cpu(case, monkeypatch):
    assert not torch.backends.cuda.matmul.allow_tf32  # 'highest': float32 products
    cpu_randn_like(monkeypatch)
    conf, params = CASES[case]
    common.parse_conf_file(conf, params)
    env = create_environment(nonparallel=True, seed=0)
    try:
        on_cpu, on_cuda = build(env), build(env)
        assert_equal_tensors(on_cpu.state_dict(), on_cuda.state_dict())
        learner = on_cpu.learner
        unroll = Unroller(AlgorithmPolicy(on_cpu, "rollout"), env).unroll(
            TrainerConfig().unroll_length,
            raw=learner.raw_experience,
            bootstrap=learner.needs_bootstrap_row(),
        )
    finally:
        env.close()
    cpu_losses, cpu_grads, cpu_steps = train_twice(on_cpu, unroll, torch.device("cpu"))
    cuda_losses, cuda_grads, cuda_steps = train_twice(on_cuda, unroll, CUDA)

    assert all(p.is_cuda for p in on_cuda.parameters())
    for _, optimizer, _ in on_cuda.optimizers():
        assert optimizer.state and all(
            t.is_cuda for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t)
        )
    assert cpu_losses[0] == pytest.approx(cuda_losses[0], rel=1e-5, abs=1e-7)
    assert cpu_losses[1] == pytest.approx(cuda_losses[1], rel=1e-4, abs=1e-6)
    assert cpu_losses[0] != cpu_losses[1]  # the first step changed the loss
    assert cpu_grads.keys() == cuda_grads.keys() and cpu_grads
    for name, grad in cpu_grads.items():
        assert grad.abs().max() > 0, name
        error = (cuda_grads[name] - grad).abs().max()
        assert error <= 1e-4 * grad.abs().max(), (name, float(error))
    lr, trained = lr_of(on_cpu), list(cpu_grads)  # (not SAC's target networks)
    differences = torch.cat([(cuda_steps[n] - cpu_steps[n]).abs().flatten() for n in trained])
    assert float(differences.median()) < 0.01 * lr
    assert float(differences.max()) <= 2 * lr + 1e-7  # an Adam step is at most lr a side
    moved = torch.cat([cpu_steps[n].abs().flatten() for n in trained])
    assert float(moved.median()) > 0.1 * lr  # the steps compared are real ones


def tiny_trainer(root_dir, *params):
    alf.reset_configs()
    own = [f"TrainerConfig.root_dir={str(root_dir)!r}", "TrainerConfig.evaluate=False"]
    common.parse_conf_file(TINY_PPO, [*own, *params])
    return PolicyTrainer(TrainerConfig())


def cuda_ppo_run(root_dir):
    """3 iterations of the tiny PPO conf on CUDA, seed 3: ``(trainer, losses)``."""
    trainer = tiny_trainer(
        root_dir,
        "TrainerConfig.device='cuda'",
        "TrainerConfig.random_seed=3",
        "TrainerConfig.num_iterations=3",
    )
    losses = recorded_losses(trainer.algorithm)
    trainer.train()
    return trainer, losses


def test_ppo_trains_on_cuda_and_the_same_seed_repeats_exactly(tmp_path):
    first, losses = cuda_ppo_run(tmp_path / "a")
    assert first.iteration == 3 and first.env_steps == 3 * 2 * 16
    assert len(losses) == 3 and all(torch.isfinite(x.loss) for x in losses)
    state = tensors(first.algorithm.state_dict())
    assert any("exp_avg" in k for k in state)  # with the optimizer's state
    assert all(v.is_cuda and torch.isfinite(v).all() for v in state.values())
    again, _ = cuda_ppo_run(tmp_path / "b")
    assert_equal_tensors(state, again.algorithm.state_dict())


def test_sac_trains_on_cuda(tmp_path):
    common.parse_conf_file(
        SAC_PENDULUM,
        [
            f"TrainerConfig.root_dir={str(tmp_path)!r}",
            "TrainerConfig.device='cuda'",
            "TrainerConfig.evaluate=False",
            "TrainerConfig.random_seed=2",
            "TrainerConfig.initial_collect_steps=50",
            "TrainerConfig.num_env_steps=0",
            "TrainerConfig.num_iterations=80",
            "TrainerConfig.mini_batch_size=64",
            "TrainerConfig.progress_bar=False",
        ],
    )
    trainer = PolicyTrainer(TrainerConfig())
    losses = recorded_losses(trainer.algorithm)
    initial = {n: p.detach().clone() for n, p in trainer.algorithm.named_parameters()}
    trainer.train()
    assert len(losses) >= 25 and all(torch.isfinite(x.loss) for x in losses)
    for name, param in trainer.algorithm.named_parameters():
        assert param.is_cuda and torch.isfinite(param).all(), name
        assert not torch.equal(param, initial[name]), name  # every part was trained


def tensors(tree, prefix="") -> dict:
    """``{path: tensor}`` of a state dict with its optimizers' nested states (a flat
    ``{name: tensor}`` dict gives itself)."""
    if torch.is_tensor(tree):
        return {prefix: tree}
    items = tree.items() if isinstance(tree, dict) else ()
    if isinstance(tree, (list, tuple)):
        items = enumerate(tree)
    return {
        path: t
        for k, v in items
        for path, t in tensors(v, f"{prefix}.{k}" if prefix else k).items()
    }


def assert_equal_tensors(a, b):
    a, b = tensors(a), tensors(b)
    assert a and a.keys() == b.keys()
    for key, value in a.items():
        assert torch.equal(value.cpu(), b[key].cpu()), key


def played(root_dir, on: str):
    """(return, length) of 2 episodes of the newest checkpoint, played on device ``on``."""
    alf.reset_configs()
    env, algorithm = build_experiment(root_dir, [f"TrainerConfig.device={on!r}"])
    state = torch.load(
        os.path.join(root_dir, "train", "algorithm", "ckpt-4.pt"),
        map_location="cpu",
        weights_only=True,
    )
    algorithm.load_state_dict(state["algorithm"])
    assert all(p.device.type == on for p in algorithm.parameters())
    assert_equal_tensors(algorithm.state_dict(), state["algorithm"])
    try:
        return play_episodes(algorithm, env, 2)
    finally:
        env.close()


def test_a_cuda_checkpoint_resumes_and_plays_on_the_cpu(tmp_path):
    root_dir = str(tmp_path)
    command = [sys.executable, "-m", "alf.bin.train", "--conf", TINY_PPO, "--root_dir", root_dir]
    params = ["TrainerConfig.device='cuda'", "TrainerConfig.num_iterations=4"]
    command += [arg for p in params for arg in ("--conf_param", p)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    path = os.path.join(root_dir, "train", "algorithm", "ckpt-4.pt")
    saved = torch.load(path, weights_only=True)  # as written: CUDA tensors
    assert all(v.is_cuda for v in tensors(saved["algorithm"]).values())

    trainer = tiny_trainer(root_dir, "TrainerConfig.device='cpu'", "TrainerConfig.num_iterations=6")
    train_iter, at_resume = trainer.algorithm.train_iter, []

    def first_iteration_records_the_parameters():
        if not at_resume:
            state = tensors(trainer.algorithm.state_dict())
            at_resume.append({k: v.clone() for k, v in state.items()})
        return train_iter()

    trainer.algorithm.train_iter = first_iteration_records_the_parameters
    trainer.train()
    assert trainer.iteration == 6
    assert all(v.is_cpu for v in at_resume[0].values())
    assert_equal_tensors(at_resume[0], saved["algorithm"])
    assert all(torch.isfinite(p).all() for p in trainer.algorithm.parameters())

    on_cpu, on_cuda = played(root_dir, "cpu"), played(root_dir, "cuda")
    assert len(on_cpu) == 2 and on_cpu == on_cuda  # the deterministic policy, same episodes
