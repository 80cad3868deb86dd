"""``AdamTF`` against its formula written out; ALF's loss functions and ``clipped_exp``
against hand values, from Python and from gin."""

import math

import pytest
import torch

import alf
from alf.optimizers import AdamTF
from alf.utils.losses import element_wise_huber_loss, element_wise_squared_loss
from alf.utils.math_ops import clipped_exp


def test_adam_tf_steps_follow_tf_formula():
    """Two steps by hand: m, v uncorrected; lr_t = lr sqrt(1-b2^t)/(1-b1^t);
    w -= lr_t m / (sqrt(v) + eps)."""
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-7
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    spec = AdamTF(lr=lr, eps=eps)
    opt = spec.build([w])
    grads = [torch.tensor([0.5, -1.0]), torch.tensor([0.25, 3.0])]
    expected = [1.0, -2.0]
    m, v = [0.0, 0.0], [0.0, 0.0]
    for t, g in enumerate(grads, start=1):
        w.grad = g.clone()
        opt.step()
        lr_t = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
        for i in range(2):
            m[i] = b1 * m[i] + (1 - b1) * float(g[i])
            v[i] = b2 * v[i] + (1 - b2) * float(g[i]) ** 2
            expected[i] -= lr_t * m[i] / (math.sqrt(v[i]) + eps)
        assert w.detach().tolist() == pytest.approx(expected, rel=1e-6)


def test_adam_tf_differs_from_torch_adam_by_the_epsilon_placement():
    """With a large eps the two differ at step 1: TF's eps is scaled by sqrt(1 - b2)."""
    g, eps = torch.tensor([1e-3]), 1e-3
    w_tf = torch.nn.Parameter(torch.zeros(1))
    w_torch = torch.nn.Parameter(torch.zeros(1))
    tf_opt = AdamTF(lr=1.0, eps=eps).build([w_tf])
    torch_opt = torch.optim.Adam([w_torch], lr=1.0, eps=eps)
    for w, opt in ((w_tf, tf_opt), (w_torch, torch_opt)):
        w.grad = g.clone()
        opt.step()
    # TF: m = 1e-4, sqrt(v) = sqrt(1e-3) * 1e-3, lr_t = sqrt(1e-3) / 0.1
    tf_value = -(math.sqrt(1e-3) / 0.1) * 1e-4 / (math.sqrt(1e-3) * 1e-3 + eps)
    torch_value = -1e-3 / (1e-3 + eps)  # m_hat = g, sqrt(v_hat) = |g|
    assert float(w_tf.detach()) == pytest.approx(tf_value, rel=1e-5)
    assert float(w_torch.detach()) == pytest.approx(torch_value, rel=1e-5)
    assert abs(float(w_tf.detach()) - float(w_torch.detach())) > 0.4


def test_adam_tf_is_configurable_and_checkpoints():
    alf.config("AdamTF", lr=0.3)
    try:
        spec = alf.optimizers.AdamTF()
        w = torch.nn.Parameter(torch.ones(2))
        opt = spec.build([w])
        assert opt.param_groups[0]["lr"] == 0.3 and opt.param_groups[0]["eps"] == 1e-7
        w.grad = torch.ones(2)
        opt.step()
        state = opt.state_dict()
        other = AdamTF(lr=0.3).build([torch.nn.Parameter(torch.ones(2))])
        other.load_state_dict(state)
        assert other.state_dict()["state"][0]["step"] == 1
    finally:
        alf.reset_configs()


def test_losses_by_hand():
    target = torch.tensor([0.0, 0.0, 1.0, -3.0])
    prediction = torch.tensor([0.5, 2.0, 1.0, 0.0])
    assert element_wise_squared_loss(target, prediction).tolist() == [0.25, 4.0, 0.0, 9.0]
    # |d| <= 1: d^2/2; else |d| - 1/2
    assert element_wise_huber_loss(target, prediction).tolist() == [0.125, 1.5, 0.0, 2.5]


def test_clipped_exp_by_hand():
    x = torch.tensor([-30.0, 0.0, 1.0, 5.0])
    expected = [math.exp(-20.0), 1.0, math.e, math.exp(2.0)]
    assert clipped_exp(x).tolist() == pytest.approx(expected, rel=1e-6)
    assert alf.math.clipped_exp is clipped_exp


def test_gin_names_of_losses_and_clipped_exp():
    alf.config_util.apply_gin_params(
        [
            "OneStepTDLoss.td_error_loss_fn = @element_wise_huber_loss",
            "ActorCriticLoss.td_error_loss_fn = @losses.element_wise_squared_loss",
            "NormalProjectionNetwork.std_transform = @clipped_exp",
        ]
    )
    try:
        assert alf.get_config_value("OneStepTDLoss.td_error_loss_fn") is element_wise_huber_loss
        loss_fn = alf.get_config_value("ActorCriticLoss.td_error_loss_fn")
        assert loss_fn is element_wise_squared_loss
        assert alf.get_config_value("NormalProjectionNetwork.std_transform") is clipped_exp
    finally:
        alf.reset_configs()
