"""``alf.pbt.hyperparameters``: a ``Name.arg`` resolved to where its value lives in a built
PPO algorithm (optimizer lr and options, loss attributes, constant schedules), and one
error naming the value for every one that cannot change in the running process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import alf
from alf.pbt import hyperparameters as hp
from alf.utils.schedulers import ConstantScheduler
from tests.pbt.conftest import REPO, TINY_CONF, make_trainer, member_params


@pytest.fixture
def algorithm(tmp_path):
    trainer = make_trainer(tmp_path, "PPOLoss.entropy_regularization=0.01", conf=TINY_CONF)
    yield trainer.algorithm
    trainer.close()


def test_the_learning_rate_goes_to_the_schedule_and_the_param_groups(algorithm):
    lr = hp.resolve("Adam.lr", algorithm)
    assert lr.get() == 1e-3 and lr.where == "optimizer 0 (Adam) lr"
    lr.set(2.5e-4)
    spec, optimizer, params = algorithm.optimizers()[0]
    assert isinstance(spec.lr_scheduler, ConstantScheduler) and spec.lr_scheduler() == 2.5e-4
    assert [g["lr"] for g in optimizer.param_groups] == [2.5e-4]
    spec.update_lr(optimizer)  # what every update does: the value stays
    assert optimizer.param_groups[0]["lr"] == 2.5e-4 and lr.get() == 2.5e-4


def test_optimizer_options_and_clipping(algorithm):
    eps = hp.resolve("Adam.eps", algorithm)
    assert eps.get() == 1e-5
    eps.set(2e-5)
    assert algorithm.optimizers()[0][1].param_groups[0]["eps"] == 2e-5
    clip = hp.resolve("Adam.gradient_clipping", algorithm)
    assert clip.get() == 0.5
    clip.set(1)
    assert algorithm.optimizers()[0][0].gradient_clipping == 1.0


def test_loss_attributes_aliases_and_constant_schedules(algorithm):
    loss = algorithm._loss
    cases = {
        "PPOLoss.entropy_regularization": ("_entropy_regularization", 0.01, 0.02),
        "PPOLoss.gamma": ("_gamma", 0.98, 0.99),
        "ActorCriticLoss.td_lambda": ("_lambda", 0.8, 0.9),
        "PPOLoss.td_loss_weight": ("_td_loss_weight", 0.5, 0.25),
    }
    for name, (attr, old, new) in cases.items():
        param = hp.resolve(name, algorithm)
        assert param.get() == old, name
        param.set(new)
        assert getattr(loss, attr) == new, name
    clip = hp.resolve("PPOLoss.importance_ratio_clipping", algorithm)
    assert clip.get() == 0.2
    clip.set(0.3)
    assert isinstance(loss._ratio_clip, ConstantScheduler) and loss._clip_range() == 0.3


@pytest.mark.parametrize(
    "name, why",
    [
        ("PPOLoss.value_clipping", "PPOLoss._value_clipping is None"),
        ("PPOLoss.no_such_arg", "has no argument 'no_such_arg'"),
        ("NoSuchThing.lr", "no configurable is named 'NoSuchThing'"),
        ("SGD.lr", "is a function that made none of the algorithm's optimizers"),
        ("TrainerConfig.unroll_length", "TrainerConfig values are read when the run is built"),
        ("create_environment.num_parallel_environments", "is a function"),
        ("PPOLoss.td_error_loss_fn", "(function), not a number or a string"),
        ("PPOAlgorithm.loss_class", "has no attribute _loss_class, loss_class"),
        ("DqnAlgorithm.gamma", "the algorithm holds no DqnAlgorithm"),
    ],
)
def test_what_cannot_change_in_the_running_process_is_an_error_naming_it(algorithm, name, why):
    with pytest.raises(hp.UnsupportedHyperparameter) as error:
        hp.resolve(name, algorithm)
    message = str(error.value)
    assert message.startswith(f"PBTConfig.mutation: {name!r} cannot be changed"), message
    assert why in message


def test_a_scheduled_learning_rate_is_refused(tmp_path):
    example = os.path.join(REPO, "alf", "examples", "ppo_cart_pole_conf.py")
    trainer = make_trainer(tmp_path, "TrainerConfig.evaluate=False", conf=example)
    try:
        with pytest.raises(hp.UnsupportedHyperparameter, match="is a schedule"):
            hp.resolve("Adam.lr", trainer.algorithm)
        with pytest.raises(hp.UnsupportedHyperparameter, match="PPOLoss._ratio_clip is a sch"):
            hp.resolve("PPOLoss.importance_ratio_clipping", trainer.algorithm)
    finally:
        trainer.close()


def test_train_refuses_a_mutation_it_cannot_apply_with_one_line_and_writes_nothing(tmp_path):
    root = tmp_path / "member"
    command = [sys.executable, "-m", "alf.bin.train", "--conf"]
    command += [os.path.join(REPO, "tests", "confs", "tiny_pbt_conf.py"), "--root_dir", root]
    for param in (
        f"PBTConfig.workspace={str(tmp_path)!r}",
        "PBTConfig.mutation={'PPOLoss.value_clipping': 'perturb'}",
    ):
        command += ["--conf_param", param]
    env = dict(os.environ, PYTHONPATH=REPO)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [
        "alf.bin.train: error: PBTConfig.mutation: 'PPOLoss.value_clipping' cannot be changed "
        "in the running process: PPOLoss._value_clipping is None: give it a value in the conf "
        "to mutate it"
    ]
    assert not root.exists()


@alf.configurable
class _Scaled:
    """Keeps twice its ``rate``: the attribute is not where the configured value lives."""

    def __init__(self, rate: float = 0.1):
        self._rate = 2 * rate


def test_an_attribute_that_does_not_hold_the_configured_value_is_refused(algorithm):
    alf.config("_Scaled", rate=0.25)
    algorithm._loss.helper = _Scaled()
    with pytest.raises(hp.UnsupportedHyperparameter, match="holds 0.5, not the configured 0.25"):
        hp.resolve("_Scaled.rate", algorithm)


@pytest.mark.parametrize(
    "param, message",
    [
        (
            "PPOLoss.entropy_regularization=0.0",
            "PBTConfig.mutation: value of 'PPOLoss.entropy_regularization' is 0: a "
            "perturbation (a factor) cannot change it",
        ),
        (
            "PBTConfig.initial_values={'Adam.lr': 'fast'}",
            "PBTConfig.mutation: value of 'Adam.lr' must be a finite number, got 'fast'",
        ),
        (
            "PBTConfig.initial_values={'Adam.eps': 1e-3}",
            "PBTConfig.initial_values: 'Adam.eps' is not in PBTConfig.mutation",
        ),
    ],
)
def test_a_value_its_mutation_cannot_change_is_refused_at_start_up(tmp_path, param, message):
    with pytest.raises(ValueError) as error:
        make_trainer(tmp_path / "run", param, *member_params(tmp_path / "ws", 0))
    assert str(error.value).startswith(message)
    assert not (tmp_path / "ws").exists() and not (tmp_path / "run").exists()


def test_pbt_config_names_the_bad_field():
    from alf.pbt.config import PBTConfig

    ok = {"workspace": "/tmp/ws", "mutation": {"Adam.lr": "perturb"}}
    cases = [
        ({"objective": "AverageRetrun"}, "PBTConfig.objective must be one of AverageReturn,"),
        ({"policy_idx": 2, "num_policies": 2}, "PBTConfig.policy_idx must be < num_policies"),
        ({"interval_steps": 0}, "PBTConfig.interval_steps must be an int >= 1, got 0"),
        ({"replace_fraction_best": 0.0}, "PBTConfig.replace_fraction_best must be in (0.0, 1.0]"),
        ({"change_min": 0.5}, "PBTConfig.change_min must be >= 1, got 0.5"),
        ({"mutation": {}}, "PBTConfig.mutation must name at least one hyperparameter"),
        ({"mutation": "/no/such.yaml"}, "PBTConfig.mutation: mutation file /no/such.yaml cannot"),
    ]
    assert PBTConfig(**ok, objective="AverageEnvInfo/true_objective").enabled
    for change, message in cases:
        with pytest.raises(ValueError) as error:
            PBTConfig(**{**ok, **change})
        assert str(error.value).startswith(message), str(error.value)
    assert not PBTConfig(interval_steps=0).enabled  # off: nothing is checked
