"""EncodingNetwork's ALF arguments, its parallel form and loading its pre-``alf.layers``
state_dicts: values against hand computations."""

import pytest
import torch
import torch.nn.functional as F

from alf.layers import FC, ParallelConv2D, ParallelFC
from alf.networks.encoding_networks import EncodingNetwork
from alf.tensor_specs import TensorSpec


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_layer_normalization_in_hidden_and_last_layers():
    net = EncodingNetwork(
        TensorSpec((4,)),
        fc_layer_params=(6,),
        use_fc_ln=True,
        last_layer_size=3,
        last_use_fc_ln=True,
    )
    hidden, last = net._fc_layers
    with torch.no_grad():  # non-trivial affine parameters of the normalizations
        hidden._ln.weight.uniform_(0.5, 1.5)
        hidden._ln.bias.uniform_(-1, 1)
        last._ln.weight.uniform_(0.5, 1.5)
    x = torch.randn(5, 4)
    h = F.linear(x, hidden.weight, hidden.bias)
    h = torch.relu(F.layer_norm(h, (6,), hidden._ln.weight, hidden._ln.bias))
    y = F.layer_norm(F.linear(h, last.weight, last.bias), (3,), last._ln.weight, last._ln.bias)
    torch.testing.assert_close(net(x)[0], y)


def test_last_layer_batch_normalization_normalizes_the_batch():
    net = EncodingNetwork(TensorSpec((4,)), last_layer_size=3, last_use_fc_bn=True)
    (last,) = net._fc_layers
    assert last.bias is None and last._bn is not None
    x = torch.randn(64, 4) * 5 + 2
    y = net(x)[0]
    z = F.linear(x, last.weight)
    by_hand = (z - z.mean(0)) / torch.sqrt(z.var(0, unbiased=False) + 1e-5)
    torch.testing.assert_close(y, by_hand, rtol=1e-4, atol=1e-4)


def test_output_tensor_spec_reshapes_and_must_hold_the_output():
    net = EncodingNetwork(
        TensorSpec((4,)),
        fc_layer_params=(5,),
        last_layer_size=6,
        output_tensor_spec=TensorSpec((2, 3)),
    )
    x = torch.randn(7, 4)
    out = net(x)[0]
    assert out.shape == (7, 2, 3) and net.output_spec == TensorSpec((2, 3))
    hidden, last = net._fc_layers
    flat = F.linear(torch.relu(F.linear(x, hidden.weight, hidden.bias)), last.weight, last.bias)
    torch.testing.assert_close(out, flat.reshape(7, 2, 3))
    with pytest.raises(ValueError, match=r"output_tensor_spec of shape \(4,\) does not hold"):
        EncodingNetwork(TensorSpec((4,)), last_layer_size=6, output_tensor_spec=TensorSpec((4,)))


def test_a_matrix_input_keeps_its_rows():
    net = EncodingNetwork(TensorSpec((3, 4)), fc_layer_params=(5,))
    x = torch.randn(2, 3, 4)
    (layer,) = net._fc_layers
    torch.testing.assert_close(net(x)[0], torch.relu(F.linear(x, layer.weight, layer.bias)))
    assert net.output_spec == TensorSpec((3, 5))


def test_input_preprocessors_ctor_builds_the_preprocessors_from_the_spec():
    seen = []

    def ctor(spec):
        seen.append(spec)
        return {"a": FC(2, 3), "b": None}

    spec = {"a": TensorSpec((2,)), "b": TensorSpec((1,))}
    net = EncodingNetwork(spec, input_preprocessors_ctor=ctor)
    assert seen == [spec] and net.output_spec == TensorSpec((4,))
    fc = net._input_stage._preprocessors[0]
    inputs = {"a": torch.randn(3, 2), "b": torch.randn(3, 1)}
    by_hand = torch.cat([F.linear(inputs["a"], fc.weight, fc.bias), inputs["b"]], -1)
    torch.testing.assert_close(net(inputs)[0], by_hand)


def test_last_kernel_initializer_defaults_to_kernel_initializer():
    net = EncodingNetwork(
        TensorSpec((4,)),
        fc_layer_params=(3,),
        kernel_initializer=torch.nn.init.ones_,
        last_layer_size=2,
    )
    assert all(torch.all(layer.weight == 1) for layer in net._fc_layers)


@pytest.mark.parametrize("arg", ["use_batch_ensemble", "input_with_ensemble_ids"])
def test_batch_ensemble_is_refused_by_name(arg):
    with pytest.raises(ValueError, match=f"^EncodingNetwork: {arg}=True is not supported"):
        EncodingNetwork(TensorSpec((4,)), fc_layer_params=(3,), **{arg: True})


def test_a_bad_conv_entry_is_named():
    with pytest.raises(ValueError, match=r"\(filters, kernel_size, strides\[, padding\]\), got 4"):
        EncodingNetwork(TensorSpec((1, 6, 6)), conv_layer_params=(4,))


def _single_like(net, pnet, i):
    """A copy of ``net`` holding replica ``i`` of the parallel network ``pnet``."""
    single = net.copy()
    parallel = [m for m in pnet.modules() if isinstance(m, (ParallelFC, ParallelConv2D))]
    singles = [*single._conv_layers, *single._fc_layers]
    assert len(parallel) == len(singles)
    with torch.no_grad():
        for p, s in zip(parallel, singles):
            s.weight.copy_(p.weight[i])
            if s.bias is not None:
                s.bias.copy_(p.bias[i])
    return single


def test_parallel_form_equals_the_loop_of_single_networks():
    spec = TensorSpec((2, 6, 6))
    net = EncodingNetwork(
        spec, conv_layer_params=((3, 3, 1),), fc_layer_params=(5,), last_layer_size=4
    )
    pnet = net.make_parallel(3)
    assert pnet.output_spec == TensorSpec((3, 4))
    x = torch.randn(2, 3, *spec.shape)  # a different input per replica
    out = pnet(x)[0]
    assert out.shape == (2, 3, 4)
    for i in range(3):
        torch.testing.assert_close(out[:, i], _single_like(net, pnet, i)(x[:, i])[0])
    shared = torch.randn(2, *spec.shape)  # one input read by every replica
    out = pnet(shared)[0]
    for i in range(3):
        torch.testing.assert_close(out[:, i], _single_like(net, pnet, i)(shared)[0])


def test_parallel_form_of_a_nested_input_with_output_spec():
    spec = {"a": TensorSpec((2,)), "b": TensorSpec((3,), torch.int64)}
    net = EncodingNetwork(
        spec, fc_layer_params=(4,), last_layer_size=6, output_tensor_spec=TensorSpec((3, 2))
    )
    pnet = net.make_parallel(2)
    x = {"a": torch.randn(5, 2, 2), "b": torch.randint(0, 3, (5, 2, 3))}
    out = pnet(x)[0]
    assert out.shape == (5, 2, 3, 2)
    for i in range(2):
        xi = {k: v[:, i] for k, v in x.items()}
        torch.testing.assert_close(out[:, i], _single_like(net, pnet, i)(xi)[0])


def test_a_state_dict_saved_before_alf_layers_loads():
    """Before alf.layers, FC layers were nn.Linear entries of _fc_layers followed by their
    batch normalization's entry, and conv layers nn.Conv2d entries of _conv_layers."""
    net = EncodingNetwork(
        TensorSpec((1, 5, 5)),
        conv_layer_params=((2, 3, 1),),
        fc_layer_params=(4,),
        use_fc_bn=True,
        last_layer_size=3,
    )
    w_conv, b_conv = torch.randn(2, 1, 3, 3), torch.randn(2)
    w1, w2, b2 = torch.randn(4, 18), torch.randn(3, 4), torch.randn(3)
    gamma, beta = torch.rand(4) + 0.5, torch.randn(4)
    mean, var = torch.randn(4), torch.rand(4) + 0.5
    old = {
        "_conv_layers.0.weight": w_conv,
        "_conv_layers.0.bias": b_conv,
        "_fc_layers.0.weight": w1,
        "_fc_layers.1.weight": gamma,
        "_fc_layers.1.bias": beta,
        "_fc_layers.1.running_mean": mean,
        "_fc_layers.1.running_var": var,
        "_fc_layers.1.num_batches_tracked": torch.tensor(7),
        "_fc_layers.2.weight": w2,
        "_fc_layers.2.bias": b2,
    }
    net.load_state_dict(old)
    net.eval()
    x = torch.randn(3, 1, 5, 5)
    z = torch.relu(F.conv2d(x, w_conv, b_conv)).flatten(1)
    z = torch.relu((F.linear(z, w1) - mean) / torch.sqrt(var + 1e-5) * gamma + beta)
    torch.testing.assert_close(net(x)[0], F.linear(z, w2, b2))
    assert int(net._fc_layers[0]._bn.num_batches_tracked) == 7


def test_a_current_state_dict_round_trips_unchanged():
    spec = {"image": TensorSpec((1, 6, 6)), "speed": TensorSpec((2,))}
    image = EncodingNetwork(spec["image"], conv_layer_params=((2, 3, 1), (2, 3, 1)))
    net = EncodingNetwork(
        spec,
        input_preprocessors={"image": image, "speed": None},
        fc_layer_params=(5, 4),
        use_fc_bn=True,
        last_layer_size=3,
    )
    twin = net.copy()
    state = net.state_dict()
    assert "_fc_layers.1._bn.running_mean" in state
    assert "_input_stage._preprocessors.0._conv_layers.1._conv.weight" in state
    twin.load_state_dict(state)
    assert twin.state_dict().keys() == state.keys()
    inputs = {"image": torch.randn(4, 1, 6, 6), "speed": torch.randn(4, 2)}
    net.eval(), twin.eval()
    torch.testing.assert_close(twin(inputs)[0], net(inputs)[0])


def test_convolution_biases_start_at_zero():
    net = EncodingNetwork(TensorSpec((1, 5, 5)), conv_layer_params=((2, 3, 1),))
    assert torch.equal(net._conv_layers[0].bias, torch.zeros(2))
    pnet = net.make_parallel(2)
    (conv,) = [m for m in pnet.modules() if isinstance(m, ParallelConv2D)]
    assert torch.equal(conv.bias, torch.zeros(2, 2))
