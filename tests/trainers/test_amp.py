"""Mixed-precision training (``TrainerConfig.enable_amp``), checked by its numbers.

- On the CPU the matrix products of a training update run in bfloat16: every ``Linear``'s
  output in an update is bit for bit the product of the bfloat16-rounded input, weight and
  bias, while the rollout's stay float32; the loss reaches ``update_with_gradient`` in
  float32 and outside autocast; parameters, gradients and Adam's moments stay float32.
- Without it nothing changes: no autocast, no scaler, no new checkpoint entry, and the
  parameters are those of a config that never heard of AMP (an ``amp_dtype`` set alone is
  ignored), while with it they differ.
- A bad ``amp_dtype`` is a one-line error (``alf.bin.train``: exit 2).
- float16 (selectable on the CPU too) goes through a ``GradScaler``: clipping and the
  gradient norms are in true units; overflowing updates are skipped by the scaler and not
  counted as non-finite while the scale can still back off; the scaler's state is in the
  checkpoint and a resumed run continues exactly as the uninterrupted one.
- Learning: PPO on the counting env reaches its optimum with AMP in the budget and to the
  thresholds of ``test_ppo_learns_counting_env_optimum``; the slow test does the same on
  CartPole with the example conf.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from alf.algorithms.algorithm import Algorithm
from alf.algorithms.config import TrainerConfig
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.data_structures import LossInfo
from alf.layers import FC
from alf.optimizers import SGD, Adam
from alf.utils import init_from, seeding
from alf.utils.finite import NonFiniteError
from alf.utils.mixed_precision import GRAD_SCALER_KEY, MixedPrecision
from tests.algorithms.algorithm_test_utils import (
    COUNTING_OPTIMUM,
    counting_env,
    evaluate,
    make_algorithm,
    parameters_of,
)
from tests.bin.test_train_play import scalars
from tests.trainers.test_policy_trainer import TINY_CONF, assert_same_tensors, make_trainer


def _config(**kwargs) -> TrainerConfig:
    """``test_ppo_algorithm``'s PPO settings on the counting env."""
    args = dict(
        unroll_length=10,
        mini_batch_size=20,
        mini_batch_length=1,
        num_updates_per_train_iter=4,
        replay_buffer_length=10,
        whole_replay_buffer_training=True,
        clear_replay_buffer=True,
    )
    args.update(kwargs)
    return TrainerConfig(**args)


def _ppo(seed: int = 1, **config):
    seeding.set_random_seed(seed)
    env = counting_env(num_envs=4, seed=seed)
    return make_algorithm(PPOAlgorithm, env, _config(**config), loss=PPOLoss(gamma=0.9)), env


def _train(seed: int, num_iterations: int, **config):
    alg, env = _ppo(seed, **config)
    try:
        for _ in range(num_iterations):
            alg.train_iter()
    finally:
        env.close()
    return alg


class _LinearRecorder:
    """Forward hooks on every linear layer of a module (``alf.layers.FC`` of the encoders,
    ``nn.Linear`` of the projection heads): what each call computed."""

    def __init__(self, module: torch.nn.Module):
        # (with grad: an update, output dtype, autocast on, matches bf16, is a head)
        self.calls = []
        self._handles = [
            m.register_forward_hook(self._hook)
            for m in module.modules()
            if isinstance(m, (torch.nn.Linear, FC))
        ]

    def _hook(self, module, inputs, output):
        (x,) = inputs
        head = isinstance(module, torch.nn.Linear)
        activation = (lambda y: y) if head else module._activation
        with torch.autocast("cpu", enabled=False):
            bias = None if module.bias is None else module.bias.bfloat16()
            by_hand = activation(F.linear(x.bfloat16(), module.weight.bfloat16(), bias))
        self.calls.append(
            (
                torch.is_grad_enabled(),
                output.dtype,
                torch.is_autocast_enabled("cpu"),
                output.dtype == torch.bfloat16 and torch.equal(output, by_hand),
                head,
            )
        )

    def close(self):
        for handle in self._handles:
            handle.remove()


def _spy_on_updates(alg) -> list:
    """Record, at each ``update_with_gradient``, the loss's dtype and whether autocast is on."""
    seen = []
    original = alg.update_with_gradient

    def update_with_gradient(loss_info, *args, **kwargs):
        seen.append((loss_info.loss.dtype, torch.is_autocast_enabled("cpu")))
        return original(loss_info, *args, **kwargs)

    alg.update_with_gradient = update_with_gradient
    return seen


def _float_state_dtypes(alg) -> set:
    dtypes = {p.dtype for p in alg.parameters()}
    dtypes |= {p.grad.dtype for p in alg.parameters() if p.grad is not None}
    for _, optimizer, _ in alg.optimizers():
        for state in optimizer.state.values():
            dtypes |= {v.dtype for v in state.values() if v.is_floating_point()}
    return dtypes


# -- bfloat16 on the CPU -----------------------------------------------------------------


def test_cpu_amp_multiplies_in_bfloat16_in_updates_only_and_keeps_float32_state():
    alg, env = _ppo(enable_amp=True)
    assert alg.mixed_precision.dtype == torch.bfloat16 and alg.mixed_precision.scaler is None
    recorder, updates = _LinearRecorder(alg), _spy_on_updates(alg)
    try:
        alg.train_iter()
    finally:
        recorder.close()
        env.close()
    in_updates = [c for c in recorder.calls if c[0] and not c[4]]
    heads_in_updates = [c for c in recorder.calls if c[0] and c[4]]
    in_rollout = [c for c in recorder.calls if not c[0]]
    assert in_updates and heads_in_updates and in_rollout
    # every hidden product of an update is the bfloat16 one, bit for bit
    assert all(
        dtype == torch.bfloat16 and autocast and by_hand
        for _, dtype, autocast, by_hand, _ in in_updates
    )
    # the projection heads (logits, means) compute in float32
    assert all(
        dtype == torch.float32 and not autocast for _, dtype, autocast, *_ in heads_in_updates
    )
    assert all(dtype == torch.float32 and not autocast for _, dtype, autocast, *_ in in_rollout)
    # 4 epochs of 2 minibatches (40 steps, 20 a minibatch), each loss back in float32
    assert updates == [(torch.float32, False)] * 8
    assert _float_state_dtypes(alg) == {torch.float32}
    assert GRAD_SCALER_KEY not in alg.state_dict()  # bfloat16 needs no scaler


def test_without_amp_nothing_changes_and_with_it_the_parameters_differ():
    plain = _train(seed=3, num_iterations=3)
    alg, env = _ppo(seed=3, enable_amp=False, amp_dtype="float16")  # amp_dtype alone: ignored
    assert alg.mixed_precision is None
    recorder, updates = _LinearRecorder(alg), _spy_on_updates(alg)
    try:
        for _ in range(3):
            alg.train_iter()
    finally:
        recorder.close()
        env.close()
    assert {(dtype, autocast) for _, dtype, autocast, *_ in recorder.calls} == {
        (torch.float32, False)
    }
    assert set(updates) == {(torch.float32, False)}
    assert alg.state_dict().keys() == plain.state_dict().keys()
    assert_same_tensors(parameters_of(alg), parameters_of(plain))
    amp = parameters_of(_train(seed=3, num_iterations=3, enable_amp=True))
    assert any(not torch.equal(amp[k], v) for k, v in parameters_of(plain).items())


# -- configuration errors ----------------------------------------------------------------


def test_a_bad_amp_dtype_is_a_one_line_error_naming_it():
    expected = (
        "TrainerConfig.amp_dtype must be one of ('bfloat16', 'float16') (or None: float16 "
        "on CUDA, bfloat16 on the CPU), got 'int8'"
    )
    with pytest.raises(ValueError) as error:
        TrainerConfig(enable_amp=True, amp_dtype="int8")
    assert str(error.value) == expected
    with pytest.raises(TypeError, match=r"^TrainerConfig.amp_dtype=16: expected"):
        TrainerConfig(enable_amp=True, amp_dtype=16)


def test_train_refuses_a_bad_amp_dtype_in_one_line_with_exit_status_2(tmp_path):
    command = [sys.executable, "-m", "alf.bin.train", "--conf", TINY_CONF]
    command += ["--root_dir", str(tmp_path / "run"), "--conf_param", "TrainerConfig.enable_amp=1"]
    command += ["--conf_param", "TrainerConfig.amp_dtype='fp8'"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "TrainerConfig.amp_dtype must be one of" in last and "got 'fp8'" in last


# -- float16 and the grad scaler ---------------------------------------------------------


class _Linear(Algorithm):
    """``y = w . x + b`` on rows of ones, the loss ``scale`` times its mean: the gradient
    of each weight and of the bias is ``scale``."""

    def __init__(self, init_scale=None, optimizer=None):
        super().__init__(optimizer=optimizer or Adam(lr=0.1), name="Lin")
        self.layer = torch.nn.Linear(2, 1)
        torch.nn.init.constant_(self.layer.weight, 1.0)
        torch.nn.init.constant_(self.layer.bias, 0.0)
        if init_scale is not None:
            self.set_mixed_precision(MixedPrecision("cpu", torch.float16, init_scale=init_scale))

    def loss(self, scale: float, constant: float = 0.0) -> LossInfo:
        out = self.layer(torch.ones(3, 2)).squeeze(-1) * scale
        return LossInfo(loss=out, scalar_loss=torch.tensor(constant))


def test_with_a_scaler_clipping_and_norms_are_in_true_units():
    plain = _Linear(optimizer=SGD(lr=0.1, gradient_clipping=0.5))
    scaled = _Linear(init_scale=2.0**10, optimizer=SGD(lr=0.1, gradient_clipping=0.5))
    for alg in (plain, scaled):
        alg.update_with_gradient(alg.loss(2.0))
    # gradients (2, 2) and 2: norm sqrt(12) whatever the scale; clipped to norm 0.5, so
    # each parameter moves by 0.1 * 2 * 0.5 / sqrt(12)
    assert scaled.last_grad_norms["SGD"].item() == pytest.approx(12**0.5)
    assert scaled.last_grad_norms["SGD"].item() == plain.last_grad_norms["SGD"].item()
    step = 0.1 * 2 * 0.5 / (12**0.5 + 1e-6)
    assert scaled.layer.weight.flatten().tolist() == pytest.approx([1 - step] * 2)
    assert scaled.layer.bias.tolist() == pytest.approx([-step])
    assert_same_tensors(parameters_of(scaled), parameters_of(plain))


def test_overflows_the_scaler_skips_are_not_counted_as_non_finite_updates():
    # gradients 2**10 * scale overflow float32 (2**128) until the scale is 2**117
    alg = _Linear(init_scale=2.0**127)
    alg.max_non_finite_updates_in_a_row = 2
    before = parameters_of(alg)
    for _ in range(10):
        alg.update_with_gradient(alg.loss(2.0**10))
    assert_same_tensors(parameters_of(alg), before)  # 10 skipped: no step, no Adam state
    assert not alg.optimizers()[0][1].state
    assert (alg.scaler_updates_skipped, alg.non_finite_updates_skipped) == (10, 0)
    assert alg.mixed_precision.scaler.get_scale() == 2.0**117
    alg.update_with_gradient(alg.loss(2.0**10))  # now it fits: Adam's first step, lr
    assert alg.layer.weight.flatten().tolist() == pytest.approx([0.9, 0.9])
    assert (alg.scaler_updates_skipped, alg.non_finite_updates_skipped) == (10, 0)
    assert alg.mixed_precision.scaler.get_scale() == 2.0**117


def test_with_a_scaler_below_1_non_finite_updates_count_and_stop_the_run():
    alg = _Linear(init_scale=2.0)
    alg.max_non_finite_updates_in_a_row = 3
    alg.update_with_gradient(alg.loss(float("nan")))  # scale 2: the scaler's, halved to 1
    alg.update_with_gradient(alg.loss(float("nan")))  # scale 1: the scaler's, to 0.5
    assert (alg.scaler_updates_skipped, alg.non_finite_updates_skipped) == (2, 0)
    alg.update_with_gradient(alg.loss(float("nan")))
    alg.update_with_gradient(alg.loss(float("nan")))
    with pytest.raises(NonFiniteError, match=r"^Lin: 3 updates in a row had a non-finite loss"):
        alg.update_with_gradient(alg.loss(float("nan")))
    assert (alg.scaler_updates_skipped, alg.non_finite_updates_skipped) == (2, 3)


def test_with_a_scaler_a_non_finite_loss_with_finite_gradients_counts_at_once():
    alg = _Linear(init_scale=2.0**16)
    alg.update_with_gradient(alg.loss(1.0, constant=float("inf")))  # no gradient path
    assert (alg.scaler_updates_skipped, alg.non_finite_updates_skipped) == (0, 1)
    assert alg.mixed_precision.scaler.get_scale() == 2.0**16  # nothing to back off from


def test_float16_ppo_survives_more_scaler_skips_than_non_finite_updates_allowed():
    alg = _train(
        seed=1,
        num_iterations=3,
        enable_amp=True,
        amp_dtype="float16",
        max_non_finite_updates_in_a_row=2,
    )
    assert alg.mixed_precision.dtype == torch.float16
    # the first updates at scale 2**16 overflow float16 in a row: the scaler's business
    assert alg.scaler_updates_skipped > 2 and alg.non_finite_updates_skipped == 0
    assert alg.mixed_precision.scaler.get_scale() == 2.0 ** (16 - alg.scaler_updates_skipped)
    assert _float_state_dtypes(alg) == {torch.float32}


# -- checkpoints -------------------------------------------------------------------------


def test_the_scaler_state_round_trips_through_a_checkpoint_file(tmp_path):
    alg = _train(seed=2, num_iterations=3, enable_amp=True, amp_dtype="float16")
    scaler = alg.mixed_precision.scaler
    assert scaler.get_scale() < 2.0**16  # it has backed off: not the initial state
    path = tmp_path / "state.pt"
    torch.save(alg.state_dict(), path)
    state = torch.load(path, weights_only=True)
    assert state[GRAD_SCALER_KEY] == scaler.state_dict()

    fresh, env = _ppo(seed=9, enable_amp=True, amp_dtype="float16")
    env.close()
    assert fresh.mixed_precision.scaler.state_dict() != scaler.state_dict()
    fresh.load_state_dict(state)
    assert fresh.mixed_precision.scaler.state_dict() == scaler.state_dict()
    assert_same_tensors(parameters_of(fresh), parameters_of(alg))

    # a float32 run takes the weights and ignores the scaler; init_from never takes it
    plain, env = _ppo(seed=9)
    env.close()
    plain.load_state_dict(state)
    assert_same_tensors(parameters_of(plain), parameters_of(alg))
    assert GRAD_SCALER_KEY not in init_from._selected(state, with_data_transformer=True)


def test_a_resumed_float16_run_continues_exactly_as_the_uninterrupted_one(tmp_path):
    amp = ["TrainerConfig.enable_amp=True", "TrainerConfig.amp_dtype='float16'"]
    full = make_trainer(tmp_path / "full", *amp)
    full.train()
    resumed_dir = tmp_path / "resumed"
    make_trainer(resumed_dir, *amp, "TrainerConfig.num_iterations=8").train()
    first = torch.load(resumed_dir / "train" / "algorithm" / "ckpt-8.pt", weights_only=True)
    assert first["algorithm"][GRAD_SCALER_KEY]["scale"] < 2.0**16
    resumed = make_trainer(resumed_dir, *amp)
    resumed.train()
    assert resumed.iteration == 16
    a = torch.load(resumed_dir / "train" / "algorithm" / "ckpt-16.pt", weights_only=True)
    b = torch.load(tmp_path / "full" / "train" / "algorithm" / "ckpt-16.pt", weights_only=True)
    assert_same_tensors(a["algorithm"], b["algorithm"])  # the scaler's state included
    assert GRAD_SCALER_KEY in a["algorithm"]


# -- learning ----------------------------------------------------------------------------


@pytest.mark.parametrize("amp_dtype", ["bfloat16", "float16"])
def test_ppo_with_amp_learns_counting_env_optimum(amp_dtype):
    """The budget and thresholds of ``test_ppo_learns_counting_env_optimum``."""
    alg = _train(seed=1, num_iterations=40, enable_amp=True, amp_dtype=amp_dtype)
    eval_env = counting_env(num_envs=2, seed=7)
    try:
        assert evaluate(alg, eval_env) == COUNTING_OPTIMUM
        assert alg.metrics.average_return > 0.8 * COUNTING_OPTIMUM
    finally:
        eval_env.close()


@pytest.mark.slow
def test_ppo_cart_pole_with_amp_reaches_475(tmp_path):
    """The example conf with bfloat16 AMP: the median of three seeds' best evaluation
    return reaches 475 within 40,000 steps, as the float32 runs of
    ``test_ppo_cart_pole_on_two_ranks_reaches_475`` must."""
    conf = os.path.join(os.path.dirname(__file__), "..", "..", "alf", "examples")
    best = []
    for seed in range(3):
        root = tmp_path / f"s{seed}"
        command = [sys.executable, "-m", "alf.bin.train", "--root_dir", str(root)]
        command += ["--conf", os.path.join(conf, "ppo_cart_pole_conf.py")]
        for param in [
            "TrainerConfig.enable_amp=True",
            f"TrainerConfig.random_seed={seed}",
            "TrainerConfig.num_env_steps=40000",
            "TrainerConfig.eval_interval=5",
            "TrainerConfig.progress_bar=False",
        ]:
            command += ["--conf_param", param]
        subprocess.run(command, check=True, capture_output=True, timeout=600)
        best.append(max(v for _, v in scalars(root / "eval", "Metrics/AverageReturn")))
    assert sorted(best)[1] >= 475, best


# -- CUDA ----------------------------------------------------------------------------------


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize(
    "amp_dtype, dtype, scaled",
    [("None", torch.float16, True), ("'bfloat16'", torch.bfloat16, False)],
)
def test_cuda_amp_updates_in_the_chosen_dtype(tmp_path, amp_dtype, dtype, scaled):
    from alf.utils import device

    params = ["TrainerConfig.device='cuda'", "TrainerConfig.enable_amp=True"]
    params += [f"TrainerConfig.amp_dtype={amp_dtype}", "TrainerConfig.num_iterations=3"]
    try:
        trainer = make_trainer(tmp_path / "run", *params)
        alg, outputs = trainer.algorithm, []
        for m in alg.modules():
            if isinstance(m, FC):  # the hidden layers (the projection heads run in float32)
                m.register_forward_hook(
                    lambda m, i, o: outputs.append(
                        (torch.is_grad_enabled(), o.device.type, o.dtype)
                    )
                )
        trainer.train()
    finally:
        device.set_device("cpu")
    assert (alg.mixed_precision.device_type, alg.mixed_precision.dtype) == ("cuda", dtype)
    assert (alg.mixed_precision.scaler is not None) == scaled
    assert {(t, d) for grad, t, d in outputs if grad} == {("cuda", dtype)}
    assert {(t, d) for grad, t, d in outputs if not grad} == {("cuda", torch.float32)}
    assert _float_state_dtypes(alg) == {torch.float32}
    assert all(p.is_cuda and torch.isfinite(p).all() for p in alg.parameters())
    assert (GRAD_SCALER_KEY in alg.state_dict()) == scaled
