"""``NoisyFC``: the factorised noise by hand, the noise held until ``reset_noise``, the mean
network in eval mode, the paper's initialization, gradients and checkpoints."""

import math

import pytest
import torch

import alf.layers as L
from alf.layers.noisy import noisy_layers, reset_noise


def _set(param, values):
    with torch.no_grad():
        param.copy_(torch.as_tensor(values, dtype=torch.float32).reshape(param.shape))


def _f(u):
    return u.sign() * u.abs().sqrt()


def test_noisy_fc_by_hand():
    layer = L.NoisyFC(2, 2, activation=torch.relu)
    _set(layer.weight, [[1.0, -1.0], [0.5, 2.0]])
    _set(layer.bias, [0.5, -3.0])
    _set(layer.weight_sigma, [[0.1, 0.2], [0.3, 0.4]])
    _set(layer.bias_sigma, [1.0, 2.0])
    _set(layer.epsilon_in, [1.0, -2.0])  # f(ε_in) (what reset_noise stores)
    _set(layer.epsilon_out, [0.5, -1.0])
    x = torch.tensor([[2.0, 1.0]])
    # noisy weight μ + σ ⊙ (ε_out ε_in^T):
    #   [[1 + .1*.5*1, -1 + .2*.5*(-2)], [.5 + .3*(-1)*1, 2 + .4*(-1)*(-2)]]
    #   = [[1.05, -1.2], [0.2, 2.8]]; noisy bias [0.5 + 1*.5, -3 + 2*(-1)] = [1, -5]
    # y = [2.1 - 1.2 + 1, 0.4 + 2.8 - 5] = [1.9, -1.8] -> relu [1.9, 0]
    torch.testing.assert_close(layer(x), torch.tensor([[1.9, 0.0]]))
    layer.eval()  # the mean network: [2 - 1 + .5, 1 + 2 - 3] = [1.5, 0]
    torch.testing.assert_close(layer(x), torch.tensor([[1.5, 0.0]]))


def test_reset_noise_draws_factorised_gaussian_noise_from_the_global_generator():
    layer = L.NoisyFC(3, 4)
    torch.manual_seed(7)
    layer.reset_noise()
    torch.manual_seed(7)
    eps_in, eps_out = _f(torch.randn(3)), _f(torch.randn(4))  # input first, then output
    assert torch.equal(layer.epsilon_in, eps_in) and torch.equal(layer.epsilon_out, eps_out)
    x = torch.randn(5, 3)
    weight = layer.weight + layer.weight_sigma * torch.outer(eps_out, eps_in)
    bias = layer.bias + layer.bias_sigma * eps_out
    torch.testing.assert_close(layer(x), x @ weight.T + bias)
    # the noise is held (same for every row and call) until the next reset_noise
    torch.testing.assert_close(layer(x[:1]), layer(x)[:1])
    before = layer(x)
    layer.reset_noise()
    assert not torch.allclose(layer(x), before)


def test_paper_initialization_and_gradients_reach_the_noise_scales():
    torch.manual_seed(0)
    layer = L.NoisyFC(16, 8, std_init=0.5)
    bound = 1 / math.sqrt(16)
    assert layer.weight.abs().max() <= bound and layer.bias.abs().max() <= bound
    assert torch.all(layer.weight_sigma == 0.5 * bound)
    assert torch.all(layer.bias_sigma == 0.5 * bound)
    layer(torch.randn(4, 16)).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in layer.parameters())
    custom = L.NoisyFC(4, 2, kernel_initializer=torch.nn.init.ones_)
    assert torch.all(custom.weight == 1)


def test_noise_is_not_checkpointed_and_helpers_find_every_layer():
    net = torch.nn.Sequential(L.NoisyFC(3, 4), L.FC(4, 4), L.NoisyFC(4, 2))
    assert sorted(net.state_dict()) == sorted(
        [f"{i}.{n}" for i in (0, 2) for n in ("_weight", "_bias", "_weight_sigma", "_bias_sigma")]
        + ["1._weight", "1._bias"]
    )
    assert noisy_layers(net) == [net[0], net[2]]
    before = [layer.epsilon_out.clone() for layer in noisy_layers(net)]
    reset_noise(net)
    assert all(not torch.equal(b, layer.epsilon_out) for b, layer in zip(before, net[::2]))
    with pytest.raises(ValueError, match="no parallel form"):
        net[0].make_parallel(2)
