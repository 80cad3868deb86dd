"""``TransformerBlock``: a case worked by hand, the block against an explicit per-head
softmax(QK^T * scale)V computed here with the block's own weights (every positional
encoding, masks, one or many queries), masking, gradients, refusals, and the block as a
network inside ``alf.nn.Sequential``."""

import math

import pytest
import torch
import torch.nn.functional as F

import alf
import alf.layers as L
from alf.tensor_specs import TensorSpec


def _set(param, values):
    with torch.no_grad():
        param.copy_(torch.as_tensor(values, dtype=param.dtype).reshape(param.shape))


def test_one_head_by_hand():
    block = L.TransformerBlock(
        2, 1, 2, d_k=2, d_v=2, d_ff=3, positional_encoding="none", scale_attention_score=False
    )
    for proj in (block._q_proj, block._k_proj, block._v_proj, block._o_proj):
        _set(proj, torch.eye(2))
    for param in block._mlp.parameters():  # the MLP adds nothing
        _set(param, torch.zeros(param.shape))
    # a 2-vector [a, b] normalizes to [1, -1] when a > b, [-1, 1] when a < b
    memory = torch.tensor([[[3.0, 1.0], [0.0, 2.0]]])
    query = torch.tensor([[1.0, 0.0]])
    # q = [1, -1]; keys [1, -1] and [-1, 1]: scores [2, -2]; the weights' difference is
    # tanh(2), so the attended value is tanh(2) * [1, -1]
    expected = torch.tensor([[1 + math.tanh(2), -math.tanh(2)]])
    assert torch.allclose(block(memory, query), expected, atol=1e-4)
    # the first slot masked: the query reads the second value [-1, 1] alone
    masked = block(memory, query, mask=torch.tensor([[True, False]]))
    assert torch.allclose(masked, torch.tensor([[0.0, 1.0]]), atol=1e-4)


def _positional_rows(block, m, n):
    """The encoding each (query, slot) pair reads, by the formula of the module doc."""
    table = block._positional_encoding
    if table is None:
        return None
    if block._positional == "abs":
        return torch.stack([table[:n]] * m)
    return torch.stack(
        [torch.stack([table[block.memory_size - 1 + i - j] for j in range(n)]) for i in range(m)]
    )


def _reference(block, memory, query, mask):
    """The block's output, one batch row and one head at a time."""
    d, heads, d_k, d_v = block.d_model, block._num_heads, block._d_k, block._d_v

    def ln(norm, x):
        return F.layer_norm(x, (d,), norm.weight, norm.bias, norm.eps)

    one_query = query is not None and query.ndim == 2
    query = memory if query is None else (query[:, None] if one_query else query)
    m, n = query.shape[1], memory.shape[1]
    pos = _positional_rows(block, m, n)  # [M, N, d_k] or None
    scale = d_k**-0.5 if block._scale != 1.0 else 1.0
    outputs = []
    for b in range(memory.shape[0]):
        mem, qry = ln(block._norm1, memory[b]), ln(block._norm1, query[b])
        results = []
        for h in range(heads):
            q = qry @ block._q_proj[:, h * d_k : (h + 1) * d_k]
            k = mem @ block._k_proj[:, h * d_k : (h + 1) * d_k]
            v = mem @ block._v_proj[:, h * d_v : (h + 1) * d_v]
            scores = (q + block._qk_bias[h]) @ k.t()
            if pos is not None:
                qp = q + block._qp_bias[h]
                scores = scores + torch.einsum("md,mnd->mn", qp, pos)
            scores = scores * scale
            if mask is not None:
                row_mask = mask[b] if mask.ndim == 3 else mask[b].expand(m, n)
                scores = scores.masked_fill(row_mask, float("-inf"))
            weights = torch.softmax(scores, dim=1)
            result = weights @ v
            if block._add_positional_encoding:
                result = torch.cat([result, torch.einsum("mn,mnd->md", weights, pos)], dim=1)
            results.append(result)
        y = query[b] + torch.cat(results, dim=1) @ block._o_proj
        fc1, fc2 = block._mlp[0], block._mlp[-1]
        hidden = torch.relu(ln(block._norm2, y) @ fc1.weight.t() + fc1.bias)
        outputs.append(y + hidden @ fc2.weight.t() + fc2.bias)
    out = torch.stack(outputs)
    return out[:, 0] if one_query else out


def _random_block(positional_encoding, add_positional_encoding=True, **kwargs):
    block = L.TransformerBlock(
        8, 2, 6, d_k=3, d_v=5, d_ff=7, positional_encoding=positional_encoding,
        add_positional_encoding=add_positional_encoding, **kwargs,
    ).double()  # fmt: skip
    with torch.no_grad():  # no zero biases: every term shows
        for param in block.parameters():
            param.normal_()
    return block


@pytest.mark.parametrize("positional_encoding", ["none", "abs", "rel"])
@pytest.mark.parametrize("add_positional_encoding", [True, False])
@pytest.mark.parametrize("query_length", [None, 1, 3, 6])
def test_block_equals_the_per_head_computation(
    positional_encoding, add_positional_encoding, query_length
):
    torch.manual_seed(2)
    block = _random_block(positional_encoding, add_positional_encoding)
    memory = torch.randn(2, 4, 8, dtype=torch.double)  # N = 4 < memory_size = 6
    if query_length is None:
        query, m = None, 4
    elif query_length == 1:
        query, m = torch.randn(2, 8, dtype=torch.double), 1
    else:
        query, m = torch.randn(2, query_length, 8, dtype=torch.double), query_length
    masks = [None, torch.tensor([[False, True, False, True], [True, False, False, False]])]
    per_query = torch.rand(2, m, 4) < 0.4
    per_query[..., 2] = False  # every query reads at least one slot
    masks.append(per_query[:, 0] if query_length == 1 else per_query)
    for mask in masks:
        expected = _reference(block, memory, query, mask)
        out = block(memory, query, mask)
        assert out.shape == (memory if query is None else query).shape
        assert torch.allclose(out, expected, atol=1e-10)


def test_scale_attention_score_is_d_k_to_the_minus_half():
    torch.manual_seed(3)
    scaled = _random_block("rel")
    unscaled = _random_block("rel", scale_attention_score=False)
    unscaled.load_state_dict(scaled.state_dict())
    memory = torch.randn(2, 5, 8, dtype=torch.double)
    assert torch.allclose(scaled(memory), _reference(scaled, memory, None, None), atol=1e-10)
    assert torch.allclose(unscaled(memory), _reference(unscaled, memory, None, None), atol=1e-10)
    assert not torch.allclose(scaled(memory), unscaled(memory))


@pytest.mark.parametrize("positional_encoding", ["none", "abs", "rel"])
def test_masked_slots_do_not_reach_the_output(positional_encoding):
    torch.manual_seed(4)
    block = _random_block(positional_encoding)
    memory = torch.randn(3, 5, 8, dtype=torch.double)
    query = torch.randn(3, 2, 8, dtype=torch.double)
    mask = torch.zeros(3, 5, dtype=torch.bool)
    mask[:, 3:] = True
    changed = memory.clone()
    changed[:, 3:] = torch.randn(3, 2, 8, dtype=torch.double)
    assert torch.allclose(block(memory, query, mask), block(changed, query, mask))
    assert not torch.allclose(block(memory, query), block(changed, query))


def test_relative_encoding_depends_on_the_offset():
    """With 'rel' and only the positional term, a query's weights over the slots move with it:
    query i at offset i - j from slot j reads row memory_size - 1 + i - j."""
    block = L.TransformerBlock(2, 1, 4, d_k=2, d_v=2, positional_encoding="rel")
    rows = _positional_rows(block, 3, 4)
    table = block._positional_encoding
    assert torch.equal(block.positional_encodings(3, 4), rows)
    assert torch.equal(rows[2, 0], table[3 + 2]) and torch.equal(rows[0, 3], table[0])
    assert torch.equal(rows[1, 1], rows[2, 2]) and torch.equal(rows[1, 1], table[3])
    absolute = L.TransformerBlock(2, 1, 4, d_k=2, d_v=2, positional_encoding="abs")
    assert torch.equal(absolute.positional_encodings(3, 2), absolute._positional_encoding[:2])


def test_gradients_reach_every_parameter():
    torch.manual_seed(5)
    block = L.TransformerBlock(8, 2, 6, positional_encoding="rel", dropout=0.1)
    memory = torch.randn(2, 6, 8, requires_grad=True)
    mask = (torch.rand(2, 6, 6) < 0.2) & ~torch.eye(6, dtype=torch.bool)  # each reads itself
    block(memory, mask=mask).square().sum().backward()
    assert memory.grad is not None and memory.grad.abs().sum() > 0
    for name, param in block.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_dropout_acts_in_training_only():
    torch.manual_seed(6)
    block = L.TransformerBlock(8, 2, 6, dropout=0.5)
    memory = torch.randn(2, 6, 8)
    block.eval()
    assert torch.equal(block(memory), block(memory))
    block.train()
    assert not torch.equal(block(memory), block(memory))


def test_initialization():
    torch.manual_seed(7)
    block = L.TransformerBlock(16, 4, 8, positional_encoding="rel")
    assert block._positional_encoding.shape == (15, 4) and block._o_proj.shape == (4 * 8, 16)
    assert block._positional_encoding.abs().max() <= 0.1
    assert torch.equal(block._qk_bias, torch.zeros(4, 4))
    bound = math.sqrt(6 / (16 + 16))  # Xavier uniform of [16, 16]
    assert block._q_proj.abs().max() <= bound
    assert block._q_proj.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.2)
    none = L.TransformerBlock(16, 4, 8, positional_encoding="none")
    assert none._positional_encoding is None and none._o_proj.shape == (4 * 4, 16)


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        (dict(positional_encoding="sin"), "positional_encoding='sin'"),
        (dict(dropout=1.0), "dropout=1.0"),
        (dict(num_heads=0), "num_heads=0"),
        (dict(d_k=0), "d_k=0"),
    ],
)
def test_unsupported_options_are_refused(kwargs, argument):
    args = dict(d_model=8, num_heads=2, memory_size=4)
    args.update(kwargs)
    with pytest.raises(ValueError) as info:
        L.TransformerBlock(**args)
    assert argument in str(info.value) and "\n" not in str(info.value)


def test_wrong_shapes_are_refused():
    block = L.TransformerBlock(8, 2, 4)
    with pytest.raises(ValueError, match="exceeds memory_size=4"):
        block(torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match="memory of shape"):
        block(torch.randn(2, 4, 7))
    with pytest.raises(ValueError, match="query of shape"):
        block(torch.randn(2, 4, 8), torch.randn(3, 8))
    with pytest.raises(ValueError, match="mask of shape"):
        block(torch.randn(2, 4, 8), mask=torch.zeros(2, 3, dtype=torch.bool))


def test_block_in_a_sequential_network():
    torch.manual_seed(8)
    block = L.TransformerBlock(8, 2, 5)
    net = alf.nn.Sequential(block, L.Reshape(-1), L.FC(40, 3), input_tensor_spec=TensorSpec((5, 8)))
    assert net.output_spec == TensorSpec((3,))
    x = torch.randn(4, 5, 8)
    out, state = net(x)
    assert state == () and torch.allclose(out, net[2](block(x).reshape(4, -1)))
    single = alf.nn.Sequential(block, input_tensor_spec=TensorSpec((5, 8)))
    assert single.output_spec == TensorSpec((5, 8))


def test_make_parallel_net_replicates_the_block():
    torch.manual_seed(9)
    block = L.TransformerBlock(8, 2, 5)
    parallel = L.make_parallel_net(block, 3)
    x = torch.randn(2, 3, 4, 8)
    out = parallel(x)
    assert out.shape == (2, 3, 4, 8)
    for i, replica in enumerate(parallel._replicas):
        assert torch.allclose(out[:, i], replica(x[:, i]))
    assert not torch.allclose(parallel._replicas[0]._q_proj, parallel._replicas[1]._q_proj)
