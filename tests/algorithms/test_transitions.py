"""The transition helpers shared by SAC, DDPG/TD3 and DQN, on hand-built tensors."""

import pytest
import torch

from alf.algorithms.config import TrainerConfig
from alf.algorithms.transitions import (
    TransitionMask,
    check_sampled_training,
    check_transition_length,
    flat_rows,
)
from alf.utils.value_ops import pad_first, pad_last


def _tb():
    """``[T=3, B=2, 2]`` with entry ``(t, b, k)`` = ``100 t + 10 b + k``."""
    t, b, k = torch.meshgrid(torch.arange(3), torch.arange(2), torch.arange(2), indexing="ij")
    return (100 * t + 10 * b + k).float()


def test_flat_rows_of_a_tensor_are_time_major_pairs():
    x = _tb()
    states = flat_rows(x, None, -1)
    next_states = flat_rows(x, 1, None)
    assert states.tolist() == [[0, 1], [10, 11], [100, 101], [110, 111]]
    assert next_states.tolist() == [[100, 101], [110, 111], [200, 201], [210, 211]]
    # Row n of the states and row n of the next states are one step apart.
    assert (next_states - states).tolist() == [[100, 100]] * 4


def test_flat_rows_of_a_nest():
    step_type = torch.tensor([[0, 1], [1, 2], [2, 0]])
    nest_in = {"obs": _tb(), "step_type": step_type}
    out = flat_rows(nest_in, 1, None)
    assert out["step_type"].tolist() == [1, 2, 2, 0]
    assert out["obs"][:, 0].tolist() == [100, 110, 200, 210]


def test_pad_last_and_pad_first():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])  # [T-1=2, B=2]
    assert pad_last(x).tolist() == [[1, 2], [3, 4], [0, 0]]
    assert pad_first(x).tolist() == [[0, 0], [1, 2], [3, 4]]
    y = torch.arange(8.0).reshape(2, 2, 2)  # [T-1, B, R]
    assert pad_last(y)[2].tolist() == [[0, 0], [0, 0]]
    assert torch.equal(pad_first(y)[1:], y)
    assert pad_first(x.long()).dtype == torch.int64


def test_transition_mask_drops_the_last_row_and_ands_valid_masks():
    step_type = torch.zeros(3, 2, dtype=torch.int64)
    transition_mask = TransitionMask()
    mask = transition_mask(step_type)
    assert mask.tolist() == [[True, True], [True, True], [False, False]]
    assert transition_mask(step_type) is mask  # built once per shape and device
    valid = torch.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    assert transition_mask(step_type, valid).tolist() == [
        [True, False],
        [True, True],
        [False, False],
    ]
    assert transition_mask(step_type).tolist()[0] == [True, True]  # the cached mask is unchanged
    assert transition_mask(torch.zeros(2, 1)).tolist() == [[True], [False]]


def test_config_checks():
    check_sampled_training(None, "Alg")
    check_transition_length(None, "Alg")
    sampled = TrainerConfig(whole_replay_buffer_training=False, mini_batch_length=2)
    check_sampled_training(sampled, "Alg")
    check_transition_length(sampled, "Alg")
    with pytest.raises(ValueError, match="Alg samples transitions"):
        check_sampled_training(TrainerConfig(whole_replay_buffer_training=True), "Alg")
    with pytest.raises(ValueError, match=r"mini_batch_length must be >= 2 \(got 1\)"):
        check_transition_length(TrainerConfig(mini_batch_length=1), "Alg")
    # Without a mini_batch_length the unroll length is the sequence length.
    with pytest.raises(ValueError, match=r"\(got 1\)"):
        check_transition_length(TrainerConfig(mini_batch_length=None, unroll_length=1), "Alg")
