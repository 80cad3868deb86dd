"""Configured values are checked against what their configurable's signature accepts
(alf.configuration.typecheck, with the markers of alf.configuration.argtypes)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import pytest

import alf
from alf import config_util
from alf.configuration.argtypes import (
    Count,
    Discount,
    Flag,
    LearningRate,
    NonNegativeInt,
    Probability,
    Range,
    Schedule,
)
from alf.configuration.typecheck import (
    ConfigRangeError,
    ConfigTypeError,
    accepts,
    check_value,
    describe,
    signature_hints,
)
from alf.utils.schedulers import LinearScheduler


class Base:
    pass


class Derived(Base):
    pass


class Stepper(Protocol):
    def step(self): ...


@alf.configurable
def cfg_typed(
    gamma: Discount = 0.99,
    lr: LearningRate = 1e-3,
    num_envs: Count = 1,
    skip: NonNegativeInt = 0,
    name: str = "x",
    flag: bool = False,
    layers: tuple[int, ...] | None = None,
    fn: Callable | None = None,
    cls: type[Base] = Base,
    mode: Literal["a", "b"] = "a",
    size: int | tuple[int, ...] = 1,
    unknown: NoSuchName = None,  # noqa: F821 (unresolvable: not checked)
    untyped_number=3,
    untyped_flag=True,
    untyped_text="same",
    untyped_none=None,
):
    """Returns its arguments."""
    return locals()


ACCEPTED = [
    (1, int),
    (3, float),  # an int is a float
    (2.5, float),
    (True, bool),
    ("s", str),
    (None, int | None),
    (7, int | None),
    ((64, 64), tuple[int, ...]),
    ([64, 64], tuple[int, ...]),  # a list for a tuple
    ((), tuple[int, ...]),
    ((1, 2.5), tuple[int, float]),
    (["a"], Sequence[str]),
    (len, Callable),
    (functools.partial(len), Callable | None),
    (Derived, type[Base]),
    (int, type),
    ("b", Literal["a", "b"]),
    ({"a": 1}, dict),
    ([(0, 1e-3), (1, 0.0)], LearningRate),  # a schedule may decay to 0
    (LinearScheduler([(0, 1.0)]), Schedule),
    (1, Discount),
    (1, Count),
    (0, NonNegativeInt),
    (0, Flag),
    (1, Flag),
    ("anything", None),  # nothing declared
    (3, Stepper),  # isinstance cannot tell for a protocol that is not runtime-checkable
]

REFUSED = [
    (2.5, int),
    ("1", int),
    (True, int),  # a bool is not an int
    (True, float),
    (1, bool),  # an int is not a bool
    (2, Flag),
    (3, str),
    ("s", int | None),
    ("ab", tuple[int, ...]),  # a string is not a sequence here
    ((64, "x"), tuple[int, ...]),
    ((1, 2, 3), tuple[int, float]),
    (3, Callable),
    (Base, type[Derived]),
    ("c", Literal["a", "b"]),
    ([1, 2], Schedule),
    ([(0, "x")], Schedule),
    (0, Discount),
    (1.01, Discount),
    (0, Count),
    (-1, NonNegativeInt),
    (0.0, LearningRate),
    (-0.5, Probability),
]


@pytest.mark.parametrize("value, hint", ACCEPTED)
def test_values_accepted(value, hint):
    assert accepts(value, hint)


@pytest.mark.parametrize("value, hint", REFUSED)
def test_values_refused(value, hint):
    assert not accepts(value, hint)


def test_descriptions():
    assert describe(Discount) == "a float in (0, 1]"
    assert describe(Discount, ranges=False) == "a float"
    assert describe(Count | None) == "an int >= 1 or None"
    assert describe(LearningRate) == "a float > 0 or a schedule"
    assert describe(tuple[int, ...] | None) == "a tuple of int or None"
    assert describe(Literal["a", "b"]) == "one of 'a', 'b'"
    assert describe(type[Base]) == "a subclass of Base"
    assert str(Range(0, 1, high_open=True)) == "in [0, 1)" and str(Range(high=2)) == "<= 2"


def test_one_line_messages():
    with pytest.raises(ConfigTypeError) as error:
        check_value("PPOLoss.gamma", "high", Discount)
    assert str(error.value) == "PPOLoss.gamma='high': expected a float, got str"
    with pytest.raises(ConfigRangeError) as error:
        check_value("PPOLoss.gamma", 1.5, Discount)
    assert str(error.value) == "PPOLoss.gamma=1.5: expected a float in (0, 1]"
    check_value("PPOLoss.gamma", 0.5, Discount)


def test_hints_from_annotations_and_safe_defaults():
    hints = signature_hints(cfg_typed, ["gamma", "unknown", "untyped_number", "untyped_text"])
    assert hints["gamma"] == Discount  # a string annotation (future import), resolved
    assert hints["unknown"] is None  # unresolvable: not checked
    assert hints["untyped_text"] is None  # a str default may take an int (padding='same')
    number = hints["untyped_number"]
    assert accepts(2.5, number) and accepts([0.9, 0.99], number) and accepts(None, number)
    assert not accepts("three", number)


CONFIGURED = {
    "gamma": ("'high'", "cfg_typed.gamma='high': expected a float, got str"),
    "lr": ("-1e-3", "cfg_typed.lr=-0.001: expected a float > 0 or a schedule"),
    "num_envs": ("'four'", "cfg_typed.num_envs='four': expected an int, got str"),
    "skip": ("-1", "cfg_typed.skip=-1: expected an int >= 0"),
    "name": ("3", "cfg_typed.name=3: expected a str, got int"),
    "flag": ("1", "cfg_typed.flag=1: expected a bool, got int"),
    "layers": (
        "(64, 'x')",
        "cfg_typed.layers=(64, 'x'): expected a tuple of int or None, got a tuple (int, str)",
    ),
    "fn": ("3", "cfg_typed.fn=3: expected a callable or None, got int"),
    "cls": ("int", "cfg_typed.cls=<class 'int'>: expected a subclass of Base, got type"),
    "mode": ("'c'", "cfg_typed.mode='c': expected one of 'a', 'b', got str"),
    "size": ("2.5", "cfg_typed.size=2.5: expected an int or a tuple of int, got float"),
    "untyped_number": ("'x'", "cfg_typed.untyped_number='x': expected a number, got str"),
    "untyped_flag": ("'yes'", "cfg_typed.untyped_flag='yes': expected a bool, got str"),
}


@pytest.mark.parametrize("arg", sorted(CONFIGURED))
def test_a_wrong_value_is_refused_when_set(arg):
    literal, message = CONFIGURED[arg]
    with pytest.raises((ConfigTypeError, ConfigRangeError)) as error:
        if arg == "cls":
            alf.config("cfg_typed", cls=int)
        else:
            config_util.apply_conf_params([f"cfg_typed.{arg}={literal}"])
    assert str(error.value) == message
    assert not config_util.registry.lookup_slot(f"cfg_typed.{arg}").configured


def test_values_that_fit_pass_validation():
    alf.config(
        "cfg_typed",
        gamma=1,
        lr=[(0, 1e-3), (1, 0.0)],
        num_envs=8,
        layers=[64, 64],
        fn=functools.partial(len),
        cls=Derived,
        size=(32, 32),
        unknown="anything",
        untyped_number=[0.9, 0.99],
        untyped_text=3,
        untyped_none="x",
    )
    config_util.validate_pending_configs()
    assert cfg_typed()["num_envs"] == 8


def test_gin_values_references_macros_and_scopes_are_checked():
    alf.config_util.apply_gin_params(["cfg_typed.fn = @math.sqrt", "cfg_typed.size = @cfg_typed()"])
    config_util.validate_pending_configs()  # a callable; a call's result is not checked
    alf.reset_configs()
    alf.config_util.apply_gin_params(["G = 'high'", "cfg_typed.gamma = %G"])
    with pytest.raises(ConfigTypeError, match=r"^cfg_typed.gamma='high': expected a float"):
        config_util.validate_pending_configs()
    alf.reset_configs()
    with pytest.raises(ValueError) as error:  # a scoped value as it is set, with its line
        alf.config_util.apply_gin_params(["outer/cfg_typed.num_envs = 0"])
    assert str(error.value) == (
        "--gin_param, line 1: outer/cfg_typed.num_envs=0: expected an int >= 1"
    )


def test_a_pending_value_is_checked_when_its_configurable_registers():
    """Before any call can use it: a conf that defines a configurable and calls it at once
    never runs it with the bad value."""
    alf.config("later.cfg_typed_later", n="four")  # no such configurable yet: pending
    calls = []
    with pytest.raises(ConfigTypeError) as error:

        @alf.configurable("later.cfg_typed_later")
        def cfg_typed_later(n: int = 1):
            calls.append(n)

        cfg_typed_later()
    assert str(error.value) == "cfg_typed_later.n='four': expected an int, got str"
    assert calls == []


def test_alf_own_configurables_are_checked_after_their_lazy_import():
    with pytest.raises(ConfigTypeError) as error:
        config_util.apply_conf_params(["PPOLoss.gamma='high'"])
    assert str(error.value) == "PPOLoss.gamma='high': expected a float, got str"
    with pytest.raises(ConfigTypeError) as error:
        alf.config("create_environment", num_parallel_environments="four")
    assert str(error.value) == (
        "create_environment.num_parallel_environments='four': expected an int, got str"
    )
    alf.reset_configs()
    alf.config("Adam", lr=[(0, 1e-3), (1, 0.0)], betas=(0.9, 0.999))
    alf.config("ActorDistributionNetwork", fc_layer_params=(64, 64))
    alf.config("TrainerConfig", evaluate=1, mini_batch_size=None)  # ALF's 0 / 1 flags
    config_util.validate_pending_configs()


def test_trainer_config_checks_its_fields_with_the_same_checker():
    from alf.algorithms.config import TrainerConfig

    with pytest.raises(ConfigRangeError) as error:
        TrainerConfig(unroll_length=0)
    assert str(error.value) == "TrainerConfig.unroll_length=0: expected an int >= 1"
    with pytest.raises(ConfigTypeError) as error:
        TrainerConfig(num_env_steps=1e6)
    assert str(error.value) == "TrainerConfig.num_env_steps=1000000.0: expected an int, got float"
    assert TrainerConfig(evaluate=1).evaluate is True


def test_nan_is_in_no_range():
    nan = float("nan")
    assert nan not in Range(0) and nan not in Range(high=1) and nan not in Range(0, 1)
    with pytest.raises(ConfigRangeError) as error:
        alf.config("cfg_typed", lr=nan)
    assert str(error.value) == "cfg_typed.lr=nan: expected a float > 0 or a schedule"
