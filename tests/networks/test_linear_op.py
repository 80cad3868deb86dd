"""LinearOp: the layer's own result and gradients, hooks honoured, current parameters used."""

import copy

import pytest
import torch

from alf.networks.encoding_networks import EncodingNetwork
from alf.networks.network import LinearOp
from alf.tensor_specs import TensorSpec


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_same_output_and_gradients_as_the_layer():
    layer = torch.nn.Linear(4, 3)
    x = torch.randn(5, 4)
    op = LinearOp(layer)
    assert torch.equal(op(x), layer(x))
    op(x).sum().backward()
    expected = [p.grad.clone() for p in layer.parameters()]
    layer.zero_grad()
    layer(x).sum().backward()
    assert all(torch.equal(a, p.grad) for a, p in zip(expected, layer.parameters()))
    no_bias = torch.nn.Linear(4, 3, bias=False)
    assert torch.equal(LinearOp(no_bias)(x), no_bias(x))


def test_hooks_run_and_replaced_parameters_are_used():
    layer = torch.nn.Linear(2, 2)
    op = LinearOp(layer)
    x = torch.ones(1, 2)
    handle = layer.register_forward_hook(lambda module, inputs, output: output * 0)
    assert torch.equal(op(x), torch.zeros(1, 2))
    handle.remove()
    layer.weight = torch.nn.Parameter(torch.eye(2))
    layer.load_state_dict({"weight": torch.eye(2) * 2, "bias": torch.zeros(2)}, assign=True)
    assert torch.equal(op(x), torch.full((1, 2), 2.0))
    torch.nn.utils.parametrize.register_parametrization(layer, "weight", _Double())
    assert torch.equal(op(x), torch.full((1, 2), 4.0))
    with pytest.raises(TypeError):
        LinearOp(torch.nn.Conv1d(1, 1, 1))


class _Double(torch.nn.Module):
    def forward(self, weight):
        return weight * 2


def test_deep_copied_network_uses_its_own_layers():
    net = EncodingNetwork(TensorSpec((3,)), fc_layer_params=(4,), last_layer_size=2)
    twin = copy.deepcopy(net)
    x = torch.randn(2, 3)
    before = twin(x)[0]
    with torch.no_grad():
        for p in net.parameters():
            p.add_(1.0)
    assert torch.equal(twin(x)[0], before)
    assert not torch.equal(net(x)[0], before)
