"""BatchRenorm1d against hand computations: batch norm during the warm-up, renormalized
(r and d clipped) after it, running statistics in evaluation mode, the schedule, the
gradient (r and d held constant), checkpoints; and the networks' ``fc_bn_after_activation``."""

from __future__ import annotations

import io

import pytest
import torch

from alf.layers import BatchRenorm1d
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.critic_networks import CriticNetwork
from alf.networks.encoding_networks import EncodingNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec

EPS, MOMENTUM = 1e-3, 0.01


def _layer(**kwargs):
    layer = BatchRenorm1d(3, eps=EPS, momentum=MOMENTUM, **kwargs)
    with torch.no_grad():  # an affine map that is not the identity
        layer.weight.copy_(torch.tensor([1.0, 2.0, -0.5]))
        layer.bias.copy_(torch.tensor([0.0, 1.0, 3.0]))
    return layer


def _moments(x):
    mean = x.mean(0)
    return mean, ((x - mean) ** 2).mean(0)  # biased variance


def test_warm_up_is_batch_norm_and_updates_running_moments():
    torch.manual_seed(0)
    layer = _layer(warmup_steps=1)
    x1, x2 = torch.randn(8, 3) * 2 + 1, torch.randn(8, 3) - 2
    for step, x in enumerate((x1, x2)):  # calls 0 and 1 are within the warm-up (<= 1)
        before_mean, before_var = layer.running_mean.clone(), layer.running_var.clone()
        y = layer(x)
        mean, var = _moments(x)
        expected = (x - mean) / torch.sqrt(var + EPS) * layer.weight + layer.bias
        torch.testing.assert_close(y, expected)
        torch.testing.assert_close(
            layer.running_mean, before_mean + MOMENTUM * (mean - before_mean)
        )
        torch.testing.assert_close(layer.running_var, before_var + MOMENTUM * (var - before_var))
        assert int(layer.num_batches_tracked) == step + 1


def test_after_warm_up_renormalizes_with_clipped_r_and_d():
    torch.manual_seed(1)
    layer = _layer(warmup_steps=0, r_max=1.5, d_max=0.5)
    with torch.no_grad():
        layer(torch.randn(16, 3))  # call 0: the warm-up
        layer.running_mean.copy_(torch.tensor([0.0, 3.0, -3.0]))
        layer.running_var.copy_(torch.tensor([1.0, 0.25, 9.0]))
    x = torch.randn(16, 3) * torch.tensor([1.0, 2.0, 0.1]) + torch.tensor([0.2, 0.0, 0.0])
    mean, var = _moments(x)
    running_std = torch.sqrt(torch.tensor([1.0, 0.25, 9.0]) + EPS)
    r_raw = torch.sqrt(var + EPS) / running_std
    d_raw = (mean - torch.tensor([0.0, 3.0, -3.0])) / running_std
    r, d = r_raw.clamp(1 / 1.5, 1.5), d_raw.clamp(-0.5, 0.5)
    # the data are chosen so that feature 0 is not clipped, 1 is (r above, d below) and 2 is
    # (r below, d above)
    assert torch.equal(r[0], r_raw[0]) and torch.equal(d[0], d_raw[0])
    assert r_raw[1] > 1.5 and d_raw[1] < -0.5 and r_raw[2] < 1 / 1.5 and d_raw[2] > 0.5
    y = layer(x)  # call 1: renormalized
    expected = (r * (x - mean) / torch.sqrt(var + EPS) + d) * layer.weight + layer.bias
    torch.testing.assert_close(y, expected)
    # unclipped, the training-mode output is the evaluation-mode one of the old moments
    eval_out = (x[:, 0] - 0.0) / running_std[0] * layer.weight[0] + layer.bias[0]
    torch.testing.assert_close(y[:, 0], eval_out)


def test_r_and_d_are_constants_in_the_backward_pass():
    torch.manual_seed(2)
    layer = _layer(warmup_steps=0)
    layer(torch.randn(10, 3))
    x = (torch.randn(10, 3) * 3).requires_grad_(True)
    mean_run, var_run = layer.running_mean.clone(), layer.running_var.clone()
    (layer(x) * torch.arange(30.0).reshape(10, 3)).sum().backward()
    grad = x.grad.clone()
    x.grad = None
    mean, var = x.mean(0), x.var(0, correction=0)
    std_run = torch.sqrt(var_run + EPS)
    r = (torch.sqrt(var + EPS) / std_run).clamp(1 / 3, 3).detach()
    d = ((mean - mean_run) / std_run).clamp(-5, 5).detach()
    y = (r * (x - mean) / torch.sqrt(var + EPS) + d) * layer.weight + layer.bias
    (y * torch.arange(30.0).reshape(10, 3)).sum().backward()
    torch.testing.assert_close(grad, x.grad)


def _reference(layer, x, running_mean, running_var, renorm: bool):
    """The training-mode output through autograd's gradient of the moments (r, d
    detached), for a ``[B, C]`` or ``[B, C, L]`` input."""
    dims = (0,) if x.ndim == 2 else (0, 2)
    shape = (1, -1) if x.ndim == 2 else (1, -1, 1)
    mean, var = x.mean(dims), x.var(dims, correction=0)
    x_hat = (x - mean.view(shape)) / torch.sqrt(var + EPS).view(shape)
    if renorm:
        std_run = torch.sqrt(running_var + EPS)
        r = (torch.sqrt(var + EPS) / std_run).clamp(1 / 1.5, 1.5).detach()
        d = ((mean - running_mean) / std_run).clamp(-0.5, 0.5).detach()
        x_hat = r.view(shape) * x_hat + d.view(shape)
    if layer.affine:
        x_hat = x_hat * layer.weight.view(shape) + layer.bias.view(shape)
    return x_hat


@pytest.mark.parametrize("renorm", [False, True])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("sequence", [False, True])
def test_the_written_out_gradient_is_autograds(renorm, affine, sequence):
    torch.manual_seed(6)
    layer = BatchRenorm1d(3, eps=EPS, affine=affine, warmup_steps=0, r_max=1.5, d_max=0.5)
    layer.double()
    if affine:
        with torch.no_grad():
            layer.weight.copy_(torch.tensor([1.0, 2.0, -0.5]))
            layer.bias.copy_(torch.tensor([0.0, 1.0, 3.0]))
    if renorm:  # call 0 is the warm-up; running moments the next batch is clipped against
        layer(torch.randn(12, 3, dtype=torch.float64))
        with torch.no_grad():
            layer.running_mean.copy_(torch.tensor([0.0, 3.0, -3.0]))
            layer.running_var.copy_(torch.tensor([1.0, 0.25, 9.0]))
    shape = (12, 3, 4) if sequence else (12, 3)
    x = (torch.randn(shape, dtype=torch.float64) * 2 + 0.5).requires_grad_(True)
    weights = torch.randn(shape, dtype=torch.float64)
    running = layer.running_mean.clone(), layer.running_var.clone()
    params = [x, *layer.parameters()]
    got = torch.autograd.grad((layer(x) * weights).sum(), params)
    expected = torch.autograd.grad((_reference(layer, x, *running, renorm) * weights).sum(), params)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
    if affine:  # an input that needs no gradient (an input normalization): γ's and β's
        x_in = x.detach()
        for _ in range(2):  # the layer's call before (its running moments), then the check
            running = layer.running_mean.clone(), layer.running_var.clone()
            y = layer(x_in)
        got = torch.autograd.grad((y * weights).sum(), list(layer.parameters()))
        ref = _reference(layer, x_in, *running, renorm=True)  # past the one warm-up call
        expected = torch.autograd.grad((ref * weights).sum(), list(layer.parameters()))
        for a, b in zip(got, expected):
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
    if not renorm:  # in the warm-up the output does not depend on the running moments
        warm_up = BatchRenorm1d(3, eps=EPS, affine=affine).double()
        assert torch.autograd.gradcheck(warm_up, (x,))


def test_evaluation_mode_uses_the_running_moments_and_updates_nothing():
    torch.manual_seed(3)
    layer = _layer()
    layer(torch.randn(8, 3) * 4 + 2)
    state = {k: v.clone() for k, v in layer.state_dict().items()}
    layer.eval()
    x = torch.randn(5, 3)
    y = layer(x)
    expected = (x - layer.running_mean) / torch.sqrt(layer.running_var + EPS)
    torch.testing.assert_close(y, expected * layer.weight + layer.bias)
    assert all(torch.equal(v, layer.state_dict()[k]) for k, v in state.items())


def test_clip_bounds_schedule():
    layer = BatchRenorm1d(2, warmup_steps=2, r_max=3.0, d_max=5.0, relax_steps=4)
    bounds = [layer.clip_bounds(step) for step in range(8)]
    assert bounds[:3] == [(1.0, 0.0)] * 3  # calls 0, 1, 2: num_batches_tracked <= 2
    assert bounds[3] == (1.5, 1.25) and bounds[4] == (2.0, 2.5)
    assert bounds[6] == bounds[7] == (3.0, 5.0)
    at_once = BatchRenorm1d(2, warmup_steps=2)  # sb3-contrib's: the full bounds after it
    assert at_once.clip_bounds(2) == (1.0, 0.0) and at_once.clip_bounds(3) == (3.0, 5.0)
    with pytest.raises(ValueError, match="r_max"):
        BatchRenorm1d(2, r_max=0.5)


def test_sequence_input_and_non_affine():
    torch.manual_seed(4)
    layer = BatchRenorm1d(3, eps=EPS, affine=False)
    x = torch.randn(4, 3, 5)
    flat = x.transpose(1, 2).reshape(-1, 3)
    mean, var = _moments(flat)
    expected = (x - mean[:, None]) / torch.sqrt(var[:, None] + EPS)
    torch.testing.assert_close(layer(x), expected)
    assert not list(layer.parameters())
    with pytest.raises(ValueError, match="expected"):
        layer(torch.randn(4, 2))


def test_checkpoint_round_trip_restores_the_phase():
    torch.manual_seed(5)
    a = _layer(warmup_steps=2)
    for _ in range(3):
        a(torch.randn(8, 3) * 2)
    buffer = io.BytesIO()
    torch.save(a.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert {"running_mean", "running_var", "num_batches_tracked"} <= set(state)
    b = _layer(warmup_steps=2)
    b.load_state_dict(state)
    x = torch.randn(8, 3) * 3 + 1
    torch.testing.assert_close(a(x), b(x))  # call 3: renormalized in both
    assert int(b.num_batches_tracked) == 4


# -- in the networks -----------------------------------------------------------------


def _bn(x, eps=1e-3):
    mean, var = _moments(x)
    return (x - mean) / torch.sqrt(var + eps)


def test_encoding_network_normalizes_inputs_and_activations():
    """``fc_bn_after_activation``: norm(input), FC, ReLU, norm, FC, ReLU, norm (CrossQ's
    actor trunk); each norm is a fresh BatchRenorm1d (γ = 1, β = 0) in its warm-up."""
    torch.manual_seed(6)
    net = EncodingNetwork(
        TensorSpec((3,)),
        fc_layer_params=(4, 5),
        use_fc_bn=True,
        fc_bn_ctor=BatchRenorm1d,
        fc_bn_after_activation=True,
    )
    assert [len(net._fc_norms), net._fc_layers[0]._bn] == [3, None]
    x = torch.randn(7, 3) * 3
    h = x
    for layer in net._fc_layers:
        h = torch.relu(_bn(h) @ layer.weight.T + layer.bias)
    torch.testing.assert_close(net(x)[0], _bn(h))
    with pytest.raises(ValueError, match="last_use_fc_bn"):
        EncodingNetwork(
            TensorSpec((3,)),
            fc_layer_params=(4,),
            last_layer_size=2,
            use_fc_bn=True,
            last_use_fc_bn=True,
            fc_bn_after_activation=True,
        )


def test_encoding_network_bn_ctor_before_the_activation():
    net = EncodingNetwork(TensorSpec((3,)), fc_layer_params=(4,), use_fc_bn=True,
                          fc_bn_ctor=BatchRenorm1d)  # fmt: skip
    assert isinstance(net._fc_layers[0]._bn, BatchRenorm1d) and not len(net._fc_norms)
    actor = ActorDistributionNetwork(
        TensorSpec((3,)),
        BoundedTensorSpec((2,), minimum=-1.0, maximum=1.0),
        fc_layer_params=(4,),
        use_fc_bn=True,
        fc_bn_ctor=BatchRenorm1d,
        fc_bn_after_activation=True,
    )
    assert len(actor._encoding_net._fc_norms) == 2


def test_replicated_critic_normalizes_each_replica_on_its_own():
    """Twin critics with ``fc_bn_after_activation``: each replica normalizes its joint input
    and hidden activations with its own batch statistics (hand loop over the replicas), and
    its running moments are its own batch's."""
    torch.manual_seed(7)
    obs_spec, action_spec = TensorSpec((2,)), BoundedTensorSpec((1,), minimum=-1.0, maximum=1.0)
    critic = CriticNetwork(
        (obs_spec, action_spec),
        joint_fc_layer_params=(4, 3),
        use_fc_bn=True,
        fc_bn_ctor=BatchRenorm1d,
        fc_bn_after_activation=True,
        num_replicas=2,
    )
    obs, action = torch.randn(6, 2) * 2, torch.rand(6, 1) * 2 - 1
    q, _ = critic((obs, action))
    expected, hidden = [], []
    for r in range(2):
        h = torch.cat([obs, action], -1)
        for i, (w, b) in enumerate(zip(critic._weights, critic._biases)):
            h = _bn(h) @ w[r] + b[r]
            if i < 2:
                h = torch.relu(h)
                hidden.append(h)
        expected.append(h[:, 0])
    torch.testing.assert_close(q, torch.stack(expected, 1))
    # the running mean of the second norm (after the first hidden layer): replica by replica
    running = critic._norm_modules[1].bn.running_mean
    torch.testing.assert_close(running[:4], MOMENTUM * hidden[0].mean(0))
    torch.testing.assert_close(running[4:], MOMENTUM * hidden[2].mean(0))
    # one critic, the same computation
    single = CriticNetwork(
        (obs_spec, action_spec),
        joint_fc_layer_params=(4,),
        use_fc_bn=True,
        fc_bn_ctor=BatchRenorm1d,
        fc_bn_after_activation=True,
    )
    h = torch.relu(_bn(torch.cat([obs, action], -1)) @ single._weights[0][0] + single._biases[0][0])
    expected = (_bn(h) @ single._weights[1][0] + single._biases[1][0])[:, 0]
    torch.testing.assert_close(single((obs, action))[0], expected)
    with pytest.raises(ValueError, match="last_use_fc_bn"):
        CriticNetwork(
            (obs_spec, action_spec),
            use_fc_bn=True,
            last_use_fc_bn=True,
            fc_bn_after_activation=True,
        )


@pytest.mark.parametrize("renorm", [False, True])
def test_replicas_in_place_are_the_flat_layout(renorm):
    """``forward_replicas`` on ``[R, B, n]`` gives what ``forward`` gives on the same values
    laid out ``[B, R * n]``: outputs, gradients, running moments (in training and
    evaluation)."""
    torch.manual_seed(8)
    kwargs = dict(eps=EPS, warmup_steps=0 if renorm else 10, r_max=1.5, d_max=0.5)
    a, b = BatchRenorm1d(6, **kwargs).double(), BatchRenorm1d(6, **kwargs).double()
    with torch.no_grad():
        for layer in (a, b):
            layer.weight.copy_(torch.linspace(-1.0, 2.0, 6))
            layer.bias.copy_(torch.linspace(0.5, -0.5, 6))
    for call in range(3):
        x = (torch.randn(2, 9, 3, dtype=torch.float64) * (call + 1) + call).requires_grad_()
        flat = x.detach().transpose(0, 1).reshape(9, 6).requires_grad_()
        y_rep, y_flat = a.forward_replicas(x), b(flat)
        torch.testing.assert_close(y_rep.transpose(0, 1).reshape(9, 6), y_flat)
        w = torch.randn(9, 6, dtype=torch.float64)
        (y_rep.transpose(0, 1).reshape(9, 6) * w).sum().backward()
        (y_flat * w).sum().backward()
        torch.testing.assert_close(x.grad.transpose(0, 1).reshape(9, 6), flat.grad)
        for p, q in zip((*a.parameters(), *a.buffers()), (*b.parameters(), *b.buffers())):
            torch.testing.assert_close(p, q)
            if p.grad is not None:
                torch.testing.assert_close(p.grad, q.grad)
    a.eval(), b.eval()
    x = torch.randn(2, 4, 3, dtype=torch.float64)
    expected = b(x.transpose(0, 1).reshape(4, 6))
    torch.testing.assert_close(a.forward_replicas(x).transpose(0, 1).reshape(4, 6), expected)
    with pytest.raises(ValueError, match="R \\* n = 6"):
        a.forward_replicas(torch.randn(2, 4, 2))
