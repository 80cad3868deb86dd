"""An update whose loss or gradient norm is NaN or inf is skipped (weights and optimizer state
untouched) and counted; too many in a row stop training with an error naming the algorithm."""

import pytest
import torch

from alf.algorithms.algorithm import Algorithm
from alf.data_structures import LossInfo
from alf.optimizers import Adam
from alf.utils.finite import NonFiniteError


class _Linear(Algorithm):
    def __init__(self, gradient_clipping=None):
        super().__init__(optimizer=Adam(lr=0.1, gradient_clipping=gradient_clipping), name="Lin")
        self.layer = torch.nn.Linear(2, 1)
        torch.nn.init.constant_(self.layer.weight, 1.0)
        torch.nn.init.constant_(self.layer.bias, 0.0)

    def loss(self, scale: float) -> LossInfo:
        return LossInfo(loss=self.layer(torch.ones(3, 2)).squeeze(-1) * scale)


def _snapshot(alg):
    return {k: v.clone() for k, v in alg.state_dict().items() if torch.is_tensor(v)}


@pytest.mark.parametrize("clipping", [None, 1.0])
def test_non_finite_update_is_skipped_and_a_finite_one_steps(clipping):
    alg = _Linear(clipping)
    alg.update_with_gradient(alg.loss(1.0))  # Adam's first step: weight 1 - 0.1, bias 0 - 0.1
    assert alg.layer.weight.flatten().tolist() == pytest.approx([0.9, 0.9])
    assert alg.layer.bias.tolist() == pytest.approx([-0.1])
    before, optimizer_state = _snapshot(alg), str(alg.optimizers()[0][1].state_dict())
    alg.update_with_gradient(alg.loss(float("nan")))
    after = _snapshot(alg)
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert str(alg.optimizers()[0][1].state_dict()) == optimizer_state  # no Adam step counted
    assert alg.non_finite_updates_skipped == 1
    alg.update_with_gradient(alg.loss(1.0))
    assert alg.layer.bias.item() < -0.1  # stepped again
    assert alg.non_finite_updates_skipped == 1


def test_too_many_non_finite_updates_in_a_row_stop_naming_the_algorithm():
    alg = _Linear(gradient_clipping=1.0)
    alg.max_non_finite_updates_in_a_row = 3
    for scale in (float("inf"), float("nan"), 1.0, float("nan"), float("nan")):
        alg.update_with_gradient(alg.loss(scale))  # the finite one resets the run
    with pytest.raises(NonFiniteError, match=r"^Lin: 3 updates in a row had a non-finite loss"):
        alg.update_with_gradient(alg.loss(float("nan")))
    assert alg.non_finite_updates_skipped == 5
