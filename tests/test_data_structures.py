"""Tests of alf.data_structures."""

import pickle

import numpy as np
import torch

from alf.data_structures import (
    AlgStep,
    Experience,
    LossInfo,
    StepType,
    TimeStep,
    restart,
    termination,
    transition,
    truncation,
)
from alf.tensor_specs import BoundedTensorSpec, TensorSpec


def test_step_type_codes():
    assert (StepType.FIRST, StepType.MID, StepType.LAST) == (0, 1, 2)


def test_time_step_field_order_matches_design():
    assert TimeStep._fields == (
        "step_type",
        "reward",
        "discount",
        "observation",
        "prev_action",
        "env_id",
        "untransformed",
        "env_info",
    )
    assert AlgStep._fields == ("output", "state", "info")
    assert LossInfo._fields == ("loss", "scalar_loss", "extra", "priority")


def test_restart_has_zero_reward_and_zero_prev_action():
    action_spec = {
        "a": BoundedTensorSpec((2,), "float32", -1, 1),
        "b": BoundedTensorSpec((), "int64", 0, 3),
    }
    ts = restart(np.ones(3, np.float32), action_spec, env_id=4)
    assert int(ts.step_type) == StepType.FIRST
    assert float(ts.reward) == 0.0
    assert float(ts.discount) == 1.0
    assert int(ts.env_id) == 4
    np.testing.assert_array_equal(ts.prev_action["a"], np.zeros(2, np.float32))
    assert ts.prev_action["b"].dtype == np.int64 and int(ts.prev_action["b"]) == 0
    assert bool(ts.is_first()) and not bool(ts.is_mid()) and not bool(ts.is_last())


def test_restart_vector_reward():
    ts = restart(np.zeros(1), BoundedTensorSpec((), "int64", 0, 1), reward_spec=TensorSpec((3,)))
    np.testing.assert_array_equal(ts.reward, np.zeros(3, np.float32))


def test_discount_table_helpers():
    obs, act = np.zeros(2, np.float32), np.int64(1)
    mid = transition(obs, act, reward=0.5)
    term = termination(obs, act, reward=1.5)
    trunc = truncation(obs, act, reward=2.5)
    assert (int(mid.step_type), float(mid.discount), float(mid.reward)) == (StepType.MID, 1.0, 0.5)
    assert (int(term.step_type), float(term.discount)) == (StepType.LAST, 0.0)
    assert (int(trunc.step_type), float(trunc.discount)) == (StepType.LAST, 1.0)
    assert term.reward.dtype == np.float32 and term.step_type.dtype == np.int32


def test_is_first_works_on_torch_batches():
    ts = TimeStep(step_type=torch.tensor([0, 1, 2, 0], dtype=torch.int32))
    assert ts.is_first().tolist() == [True, False, False, True]
    assert ts.is_mid().tolist() == [False, True, False, False]
    assert ts.is_last().tolist() == [False, False, True, False]


def test_experience_accessors():
    ts = TimeStep(step_type=1, reward=2.0, discount=0.5, observation=3)
    exp = Experience(time_step=ts, action=4)
    assert (exp.step_type, exp.reward, exp.discount, exp.observation) == (1, 2.0, 0.5, 3)


# -- ALF's namedtuple with defaults --

from alf.data_structures import namedtuple  # noqa: E402

Point = namedtuple("Point", ["x", "y", "z"], default_value=0, default_values={"z": 5})


def test_defaults_by_name_and_for_all_fields():
    assert Point() == (0, 0, 5)
    assert Point(1) == (1, 0, 5)
    assert Point(y=2, z=3) == (0, 2, 3)
    first = namedtuple("First", "a b c", default_values=(1, 2))
    assert first() == (1, 2, None)


def test_pickles_by_its_module():
    assert Point.__module__ == __name__
    assert pickle.loads(pickle.dumps(Point(1, 2))) == Point(1, 2, 5)
