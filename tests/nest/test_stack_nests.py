"""stack_nests: time-major stacking of step nests, and a clear error for mismatched nests."""

from typing import NamedTuple

import pytest
import torch

import alf.nest as nest


class _Step(NamedTuple):
    x: object = ()
    y: object = ()


def test_stack_nests_stacks_every_leaf_along_dim():
    steps = [_Step(x=torch.full((2,), float(t)), y={"b": torch.tensor(t)}) for t in range(3)]
    stacked = nest.stack_nests(steps)
    assert torch.equal(stacked.x, torch.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]))
    assert torch.equal(stacked.y["b"], torch.tensor([0, 1, 2]))
    by_column = nest.stack_nests([_Step(x=step.x) for step in steps], dim=1)
    assert torch.equal(by_column.x, stacked.x.T)


def test_stack_nests_rejects_different_structures():
    with pytest.raises(ValueError, match="same structure"):
        nest.stack_nests([_Step(x=torch.zeros(1)), _Step(x=torch.zeros(1), y=torch.zeros(1))])
    with pytest.raises(ValueError, match="at least one"):
        nest.stack_nests([])
