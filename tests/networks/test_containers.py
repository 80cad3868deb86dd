"""ALF's containers (``alf.nn.Sequential``, ``Parallel``, ``Branch``, ``Echo``, ``Residue``)
and cells: outputs against hand computations, named wiring, specs, recurrent state over
episode boundaries, parallel forms equal to the loop of copies, and copies and checkpoints."""

import pytest
import torch

import alf
import alf.layers as L
from alf.nest.utils import NestConcat, NestOuterProduct, NestSum
from alf.networks import Branch, Echo, GRUCell, LSTMCell, Parallel, Residue, Sequential
from alf.networks.network import Network, NetworkWrapper
from alf.tensor_specs import TensorSpec
from alf.utils.math_ops import identity
from alf.utils.torch_utils import reset_state_if_necessary


def _fc(weight, bias, activation=identity):
    weight = torch.as_tensor(weight, dtype=torch.float32)
    fc = L.FC(weight.shape[1], weight.shape[0], activation=activation)
    with torch.no_grad():
        fc.weight.copy_(weight)
        fc.bias.copy_(torch.as_tensor(bias, dtype=torch.float32))
    return fc


def test_nn_is_alf_networks():
    assert alf.nn.Sequential is Sequential and alf.nn.LSTMCell is LSTMCell


def test_sequential_by_hand():
    net = Sequential(_fc([[1.0, 2.0]], [1.0], torch.relu), L.Scale(3.0), lambda x: x - 1)
    assert isinstance(net, Network) and net.state_spec == ()
    assert net.input_tensor_spec == TensorSpec((2,)) and net.output_spec == TensorSpec((1,))
    out, state = net(torch.tensor([[1.0, 1.0], [-3.0, 0.0]]))
    # relu(1 + 2 + 1) * 3 - 1 = 11; relu(-3 + 1) * 3 - 1 = -1
    assert torch.equal(out, torch.tensor([[11.0], [-1.0]])) and state == ()
    assert len(net) == 3 and isinstance(net[1], L.Scale)


def test_sequential_named_wiring():
    net = Sequential(
        a=_fc([[1.0, 0.0], [0.0, 1.0]], [0.0, 0.0]),
        b=(("input", "a"), NestConcat()),
        c=("a", L.Sum(0)),
        output=dict(cat="b", total="c"),
        input_tensor_spec=TensorSpec((2,)),
    )
    out, _ = net(torch.tensor([[1.0, 2.0]]))
    assert torch.equal(out["cat"], torch.tensor([[1.0, 2.0, 1.0, 2.0]]))
    assert torch.equal(out["total"], torch.tensor([3.0]))
    assert net.output_spec == dict(cat=TensorSpec((4,)), total=TensorSpec(()))


def test_sequential_errors_are_one_line():
    with pytest.raises(ValueError, match="a class: add"):
        Sequential(L.Identity, input_tensor_spec=TensorSpec((2,)))
    with pytest.raises(ValueError, match="give input_tensor_spec"):
        Sequential(L.Identity())
    with pytest.raises(ValueError, match="output must be a nest of names"):
        Sequential(L.FC(2, 2), output=3)


def test_parallel_and_branch_by_hand():
    f, g = _fc([[1.0, 1.0]], [0.0]), _fc([[2.0]], [1.0])
    par = Parallel((f, g))
    assert par.input_tensor_spec == (TensorSpec((2,)), TensorSpec((1,)))
    out, _ = par((torch.tensor([[1.0, 2.0]]), torch.tensor([[5.0]])))
    assert torch.equal(out[0], torch.tensor([[3.0]])) and torch.equal(
        out[1], torch.tensor([[11.0]])
    )
    branch = Branch(a=_fc([[1.0, -1.0]], [0.0]), b=L.Sum(0), input_tensor_spec=TensorSpec((2,)))
    out, _ = branch(torch.tensor([[4.0, 1.0]]))
    assert torch.equal(out["a"], torch.tensor([[3.0]])) and torch.equal(
        out["b"], torch.tensor([5.0])
    )
    with pytest.raises(ValueError, match="input specs differ"):
        Branch(L.FC(2, 1), L.FC(3, 1))


def test_combiners_by_hand():
    x, y = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 4.0]])
    assert torch.equal(NestSum(average=True)((x, y)), torch.tensor([[2.0, 3.0]]))
    assert torch.equal(
        NestOuterProduct(padding=True)((x, y)),
        torch.tensor([[3.0, 4.0, 1.0, 6.0, 8.0, 2.0, 3.0, 4.0, 1.0]]),
    )
    assert NestOuterProduct()((TensorSpec((2,)), TensorSpec((3,)))) == TensorSpec((6,))
    assert NestConcat(dim=0)((TensorSpec((2, 3)), TensorSpec((1, 3)))) == TensorSpec((3, 3))
    with pytest.raises(ValueError, match=r"a: \(2,\).*b: \(3, 1\)"):
        NestConcat()(dict(a=TensorSpec((2,)), b=TensorSpec((3, 1))))


def _run(net, xs, first):
    """Unroll ``net`` over ``xs`` ``[T, B, ...]``, its state reset where ``first`` (as acting
    does)."""
    state = alf.nest.map_structure(lambda s: s.zeros(outer_dims=(xs.shape[1],)), net.state_spec)
    initial = state
    outs = []
    for x, is_first in zip(xs, first):
        state = reset_state_if_necessary(state, initial, is_first)
        out, state = net(x, state)
        outs.append(out)
    return torch.stack(outs)


def test_recurrent_sequential_resets_its_state_at_episode_starts():
    torch.manual_seed(0)
    net = Sequential(L.FC(3, 4, activation=torch.tanh), LSTMCell(4, 5), L.FC(5, 2))
    assert net.state_spec == [(), (TensorSpec((5,)), TensorSpec((5,))), ()]
    xs = torch.randn(6, 2, 3)
    first = torch.zeros(6, 2, dtype=torch.bool)
    first[0] = True
    first[3, 1] = True  # env 1 starts an episode at step 3
    outs = _run(net, xs, first)
    fresh = _run(net, xs[3:, 1:], torch.tensor([[True], [False], [False]]))
    # as if from scratch (a batch of 1 may round differently: compare to 1e-6)
    torch.testing.assert_close(outs[3:, 1:], fresh, rtol=0, atol=1e-6)
    carried = _run(net, xs[:, 1:], torch.tensor([[True]] + [[False]] * 5))
    assert not torch.allclose(outs[3:, 1:], carried[3:])  # the reset changed something
    torch.testing.assert_close(outs[:, :1], _run(net, xs[:, :1], first[:, :1]), rtol=0, atol=1e-6)


def test_gru_and_echo_carry_their_state():
    cell = GRUCell(2, 3)
    assert cell.state_spec == TensorSpec((3,)) and cell.output_spec == TensorSpec((3,))
    block = Sequential(
        NestConcat(),
        L.FC(3, 2),
        lambda y: (y, y[:, :1]),
        input_tensor_spec=(TensorSpec((2,)), TensorSpec((1,))),
    )
    echo = Echo(block)
    assert echo.input_tensor_spec == TensorSpec((2,)) and echo.state_spec == ((), TensorSpec((1,)))
    x = torch.randn(4, 2)
    y1, state = echo(x, ((), torch.zeros(4, 1)))
    y2, _ = echo(x, state)
    assert torch.equal(y2, block((x, y1[:, :1]))[0][0])  # step 2 read step 1's echo


def test_residue():
    net = Residue(_fc([[1.0, 0.0], [0.0, -2.0]], [0.0, 0.0]), activation=identity)
    assert torch.equal(net(torch.tensor([[1.0, 1.0]]))[0], torch.tensor([[2.0, -1.0]]))


def test_parallel_sequential_equals_the_loop_of_copies():
    torch.manual_seed(1)
    net = Sequential(L.FC(3, 8, activation=torch.relu_), L.FC(8, 2), L.Reshape(2))
    parallel = net.make_parallel(4)
    assert parallel.output_spec == TensorSpec((4, 2))
    x = torch.randn(5, 3)
    out, _ = parallel(x)
    for i in range(4):
        single = Sequential(L.FC(3, 8, activation=torch.relu_), L.FC(8, 2), L.Reshape(2))
        single[0].load_state_dict(dict(_weight=parallel[0].weight[i], _bias=parallel[0].bias[i]))
        single[1].load_state_dict(dict(_weight=parallel[1].weight[i], _bias=parallel[1].bias[i]))
        assert torch.allclose(out[:, i], single(x)[0], atol=1e-6)
    assert not torch.allclose(out[:, 0], out[:, 1])  # replicas differ


def test_unknown_modules_go_parallel_by_a_loop():
    torch.manual_seed(2)
    wrapped = NetworkWrapper(torch.nn.Linear(3, 2), TensorSpec((3,)))
    parallel = Branch(wrapped).make_parallel(2)
    out, _ = parallel(torch.randn(4, 2, 3))
    assert out.shape == (4, 2, 2)


def test_copy_and_state_dict_round_trip():
    torch.manual_seed(3)
    net = Sequential(L.FC(3, 4, activation=torch.tanh), LSTMCell(4, 5), L.FC(5, 2))
    twin = net.copy()
    x = torch.randn(2, 3)
    state = alf.nest.map_structure(lambda s: s.zeros(outer_dims=(2,)), net.state_spec)
    assert not torch.equal(net(x, state)[0], twin(x, state)[0])
    twin.load_state_dict(net.state_dict())
    assert torch.equal(net(x, state)[0], twin(x, state)[0])
    assert set(net.state_dict()) == {
        "_modules_list.0._weight",
        "_modules_list.0._bias",
        "_modules_list.1._cell.weight_ih",
        "_modules_list.1._cell.weight_hh",
        "_modules_list.1._cell.bias_ih",
        "_modules_list.1._cell.bias_hh",
        "_modules_list.2._weight",
        "_modules_list.2._bias",
    }
