"""QNetwork: Q values per action by hand, shifted action specs, bad specs, copies."""

import pytest
import torch
import torch.nn.functional as F

from alf.networks.q_networks import QNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_q_values_match_a_hand_written_mlp():
    action_spec = BoundedTensorSpec((), torch.int64, 0, 2)
    net = QNetwork(TensorSpec((4,)), action_spec, fc_layer_params=(16, 8))
    x = torch.randn(5, 4)
    q, state = net(x)
    assert q.shape == (5, 3) and state == ()
    h = x
    for layer in net._fc_layers[:2]:
        h = torch.relu(F.linear(h, layer.weight, layer.bias))
    last = net._fc_layers[2]
    torch.testing.assert_close(q, F.linear(h, last.weight, last.bias))
    assert last.weight.abs().max() <= 0.03
    assert net.output_spec == TensorSpec((3,)) and net.num_actions == 3


def test_nonzero_minimum_maps_columns_to_actions():
    action_spec = BoundedTensorSpec((), torch.int64, -2, 1)  # actions -2, -1, 0, 1
    net = QNetwork(TensorSpec((2,)), action_spec, fc_layer_params=(8,))
    assert net.num_actions == 4
    actions = torch.tensor([-2, 0, 1])
    index = net.action_index(actions)
    assert index.tolist() == [0, 2, 3]
    assert torch.equal(net.index_action(index), actions)
    q, _ = net(torch.randn(3, 2))
    assert q.shape == (3, 4)


@pytest.mark.parametrize(
    "spec",
    [
        BoundedTensorSpec((2,), torch.int64, 0, 3),  # vector action
        BoundedTensorSpec((), torch.float32, -1.0, 1.0),  # continuous
        TensorSpec((), torch.int64),  # unbounded
    ],
)
def test_rejects_non_scalar_discrete_specs(spec):
    with pytest.raises(ValueError, match="scalar discrete"):
        QNetwork(TensorSpec((2,)), spec)


def test_nested_observation_and_gradients():
    spec = {"a": TensorSpec((2,)), "b": TensorSpec((3,))}
    net = QNetwork(spec, BoundedTensorSpec((), torch.int64, 0, 1), fc_layer_params=(8,))
    q, _ = net({"a": torch.randn(6, 2), "b": torch.randn(6, 3)})
    assert q.shape == (6, 2)
    q.square().mean().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())


def test_copy_is_an_independent_qnetwork():
    net = QNetwork(TensorSpec((3,)), BoundedTensorSpec((), torch.int64, 0, 1), fc_layer_params=(8,))
    twin = net.copy(name="target_q")
    assert isinstance(twin, QNetwork) and twin.name == "target_q"
    for p, q in zip(net.parameters(), twin.parameters()):
        assert p.shape == q.shape and p is not q


# -- options: quantiles, dueling, noisy ---------------------------------------------------

ACTIONS = BoundedTensorSpec((), torch.int64, 0, 2)


def _set(param, values):
    with torch.no_grad():
        param.copy_(torch.as_tensor(values, dtype=torch.float32).reshape(param.shape))


def test_quantile_output_is_actions_by_quantiles():
    net = QNetwork(TensorSpec((1,)), ACTIONS, num_quantiles=2)
    assert net.output_spec == TensorSpec((3, 2)) and net.num_quantiles == 2
    layer = net._fc_layers[0]  # unit a * N + j holds quantile j of action a
    _set(layer.weight, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    _set(layer.bias, [0.0] * 6)
    q, _ = net(torch.tensor([[2.0]]))
    assert torch.equal(q, torch.tensor([[[2.0, 4.0], [6.0, 8.0], [10.0, 12.0]]]))
    assert QNetwork(TensorSpec((1,)), ACTIONS).num_quantiles is None


def test_dueling_aggregation_by_hand():
    net = QNetwork(TensorSpec((1,)), ACTIONS, dueling=True)
    assert not list(net._fc_layers)  # no shared layers: both streams read the observation
    advantage, value = net._head._output[0], net._head._value[0]
    _set(advantage.weight, [1.0, 2.0, 3.0])
    _set(advantage.bias, [0.0, 0.0, 1.0])
    _set(value.weight, [0.5])
    _set(value.bias, [4.0])
    q, _ = net(torch.tensor([[2.0], [0.0]]))
    # s = 2: A = [2, 4, 7], mean 13/3; V = 5 -> Q = 5 + A - 13/3
    # s = 0: A = [0, 0, 1], mean 1/3; V = 4 -> Q = 4 + A - 1/3
    expected = torch.tensor([[2.0, 4.0, 7.0], [0.0, 0.0, 1.0]])
    expected = expected - expected.mean(-1, keepdim=True) + torch.tensor([[5.0], [4.0]])
    torch.testing.assert_close(q, expected)
    assert q.shape == (2, 3) and net.output_spec == TensorSpec((3,))


def test_dueling_quantiles_aggregate_quantile_by_quantile():
    net = QNetwork(
        TensorSpec((1,)), ACTIONS, fc_layer_params=(4,), num_quantiles=2, dueling=True,
        dueling_fc_layer_params=(3,),
    )  # fmt: skip
    x = torch.randn(5, 1)
    h = net._fc_layers[0](x)
    a, v = h, h
    for layer in net._head._output:
        a = layer(a)
    for layer in net._head._value:
        v = layer(v)
    a, v = a.reshape(5, 3, 2), v.reshape(5, 1, 2)
    torch.testing.assert_close(net(x)[0], v + a - a.mean(1, keepdim=True))
    assert [m.output_size for m in net._head._value] == [3, 2]


def test_noisy_network_uses_noisy_fully_connected_layers_only():
    from alf.layers import FC, NoisyFC

    spec = TensorSpec((1, 6, 6))
    net = QNetwork(spec, ACTIONS, conv_layer_params=((2, 3, 1),), fc_layer_params=(8,), noisy=True)
    kinds = [type(m).__name__ for m in net.modules() if isinstance(m, (FC, NoisyFC))]
    assert kinds == ["NoisyFC", "NoisyFC"] and len(net._conv_layers) == 1
    x = torch.randn(4, 1, 6, 6)
    first, second = net(x)[0], net(x)[0]
    assert torch.equal(first, second)  # the noise is held between reset_noise calls
    for m in net.modules():
        if isinstance(m, NoisyFC):
            m.reset_noise()
    assert not torch.allclose(net(x)[0], first)
    net.eval()
    assert torch.equal(net(x)[0], net(x)[0])
    with pytest.raises(ValueError, match="use_fc_bn"):
        QNetwork(TensorSpec((2,)), ACTIONS, fc_layer_params=(8,), noisy=True, use_fc_ln=True)


def test_option_errors_and_copies():
    with pytest.raises(ValueError, match="dueling_fc_layer_params needs dueling"):
        QNetwork(TensorSpec((2,)), ACTIONS, dueling_fc_layer_params=(4,))
    net = QNetwork(TensorSpec((2,)), ACTIONS, fc_layer_params=(8,), dueling=True, noisy=True)
    with pytest.raises(ValueError, match="no parallel form"):
        net.make_parallel(2)
    twin = net.copy(name="target")
    assert twin.name == "target" and sorted(twin.state_dict()) == sorted(net.state_dict())
    parallel = QNetwork(TensorSpec((2,)), ACTIONS, num_quantiles=3).make_parallel(2)
    assert parallel(torch.randn(4, 2))[0].shape == (4, 2, 3, 3)
