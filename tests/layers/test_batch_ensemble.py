"""``FCBatchEnsemble``: a case worked by hand, each member equal to an ``FC`` with the weight
``W * outer(s_k, r_k)``, the ids, the initialization, the norms and the refusals."""

import pytest
import torch

import alf.layers as L


def _set(param, values):
    with torch.no_grad():
        param.copy_(torch.as_tensor(values, dtype=param.dtype).reshape(param.shape))


def test_by_hand():
    layer = L.FCBatchEnsemble(2, 2, ensemble_size=2, activation=torch.relu)
    _set(layer.weight, [[1.0, 2.0], [3.0, -1.0]])
    _set(layer.r, [[1.0, 1.0], [2.0, -1.0]])
    _set(layer.s, [[1.0, 1.0], [-1.0, 0.5]])
    _set(layer.ensemble_bias, [[0.0, 0.0], [1.0, 1.0]])
    x = torch.tensor([[1.0, 1.0], [1.0, 1.0]])
    y, ids = layer((x, torch.tensor([0, 1])))
    # member 0: W [1, 1] = [3, 2]; member 1: x * r = [2, -1], W -> [0, 7], * s -> [0, 3.5],
    # + bias -> [1, 4.5]
    assert torch.equal(ids, torch.tensor([0, 1]))
    assert torch.equal(y, torch.tensor([[3.0, 2.0], [1.0, 4.5]]))
    # member 0 with a negative output: the activation clips it
    y, _ = layer((-x[:1], torch.tensor([0])))
    assert torch.equal(y, torch.zeros(1, 2))


@pytest.mark.parametrize("use_bias", [True, False])
def test_each_member_is_an_fc_with_the_rank_one_scaled_weight(use_bias):
    torch.manual_seed(0)
    layer = L.FCBatchEnsemble(5, 3, 4, activation=torch.tanh, use_bias=use_bias,
                              bias_init_range=0.5)  # fmt: skip
    x = torch.randn(6, 2, 5)  # a leading dimension beyond the batch
    ids = torch.tensor([0, 3, 1, 1, 2, 0])
    y, _ = layer((x, ids))
    assert y.shape == (6, 2, 3)
    for b in range(6):
        k = ids[b]
        fc = L.FC(5, 3, activation=torch.tanh, use_bias=use_bias)
        _set(fc.weight, layer.weight * torch.outer(layer.s[k], layer.r[k]))
        if use_bias:
            _set(fc.bias, layer.ensemble_bias[k])
        assert torch.allclose(y[b], fc(x[b]), atol=1e-6)


def test_random_ids_and_plain_output():
    torch.manual_seed(1)
    layer = L.FCBatchEnsemble(3, 2, 5)
    x = torch.randn(200, 3)
    y, ids = layer(x)
    assert ids.shape == (200,) and ids.min() >= 0 and ids.max() < 5
    assert len(ids.unique()) == 5  # 200 draws reach every member
    assert torch.allclose(y, layer((x, ids))[0])
    plain = L.FCBatchEnsemble(3, 2, 5, output_ensemble_ids=False)
    out = plain((x, ids))
    assert isinstance(out, torch.Tensor) and out.shape == (200, 2)


def test_initialization_and_groups():
    torch.manual_seed(2)
    layer = L.FCBatchEnsemble(30, 20, 8, bias_init_range=0.3, ensemble_group=2)
    for signs in (layer.r, layer.s):
        assert set(signs.unique().tolist()) == {-1.0, 1.0}
    assert layer.ensemble_bias.abs().max() <= 0.3 and layer.ensemble_bias.std() > 0.1
    assert layer.bias is None  # the shared weight has no bias: the members have theirs
    assert all(p.ensemble_group == 2 for p in (layer.r, layer.s, layer.ensemble_bias))
    assert L.FCBatchEnsemble(3, 2, 2, use_bias=False).ensemble_bias is None


def test_norms_shift_only_with_member_biases():
    assert L.FCBatchEnsemble(3, 2, 2, use_ln=True)._ln.bias is not None
    assert L.FCBatchEnsemble(3, 2, 2, use_ln=True, use_bias=False)._ln.bias is None
    bn = L.FCBatchEnsemble(3, 2, 2, use_bn=True, use_bias=False)
    assert torch.equal(bn._bn.bias, torch.zeros(2)) and not bn._bn.bias.requires_grad
    torch.manual_seed(3)
    ln = L.FCBatchEnsemble(3, 4, 2, use_ln=True)
    y, _ = ln(torch.randn(5, 3))
    # a LayerNorm with its initial affine: each row has mean 0 and variance 1
    assert torch.allclose(y.mean(-1), torch.zeros(5), atol=1e-5)
    assert torch.allclose(y.var(-1, unbiased=False), torch.ones(5), atol=1e-3)


def test_gradients_reach_the_shared_and_the_member_parameters():
    torch.manual_seed(4)
    layer = L.FCBatchEnsemble(3, 2, 3, bias_init_range=0.1)
    y, ids = layer((torch.randn(4, 3), torch.tensor([0, 1, 0, 1])))
    y.square().sum().backward()
    assert layer.weight.grad.abs().sum() > 0
    for param in (layer.r, layer.s, layer.ensemble_bias):
        assert param.grad[:2].abs().sum() > 0
        assert torch.equal(param.grad[2], torch.zeros(param.shape[1]))  # member 2 served none


def test_refusals():
    with pytest.raises(ValueError, match="ensemble_group=0.5"):
        L.FCBatchEnsemble(3, 2, 2, ensemble_group=0.5)
    with pytest.raises(ValueError, match="ensemble_size=0"):
        L.FCBatchEnsemble(3, 2, 0)
    layer = L.FCBatchEnsemble(3, 2, 2)
    with pytest.raises(ValueError, match="ensemble_ids of shape"):
        layer((torch.randn(4, 3), torch.tensor([0, 1])))
    with pytest.raises(ValueError, match="an ensemble already"):
        L.make_parallel_net(layer, 2)
