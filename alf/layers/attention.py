"""Attention: ``TransformerBlock``, a pre-norm transformer block with ALF's arguments.

The block is two residual steps, each reading a layer-normalized input (the pre-norm
placement of Xiong et al. 2020, "On layer normalization in the transformer architecture")::

    y = query + MHA(LN1(memory), LN1(query))
    z = y + MLP(LN2(y))

``MHA`` is multi-head attention (Vaswani et al. 2017, "Attention is all you need") computed
for all heads at once as batched products on ``[B, heads, ...]``. Head ``h``'s score of
query ``m`` on memory slot ``n`` is::

    ((q[m, h] + u[h]) . k[n, h] + (q[m, h] + v[h]) . p(m, n)) * scale

with learned per-head biases ``u`` (``qk_bias``) and ``v`` (``qp_bias``, Dai et al. 2019,
"Transformer-XL") and a learned positional encoding ``p`` of ``d_k`` numbers shared by the
heads: ``p(m, n) = P[n]`` for absolute positions, ``P[memory_size - 1 + m - n]`` for relative
ones, and no positional term with ``'none'``. With ``add_positional_encoding`` each head's
result is its weighted sum of values followed by the same weighted sum of ``p(m, .)``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

import alf
from alf.layers.dense import FC
from alf.layers.elementwise import Identity

_POSITIONAL_ENCODINGS = ("none", "abs", "rel")


def _check_positive(name: str, value: int) -> None:
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"TransformerBlock: {name}={value!r} must be a positive int")


@alf.configurable
@alf.repr_wrapper
class TransformerBlock(nn.Module):
    """A transformer block on ``[B, N, d_model]`` memories (module doc).

    Args:
        d_model: size of the memory's and the query's last dimension.
        num_heads: number of attention heads.
        memory_size: the longest memory (and query) the block accepts.
        d_k: size of a head's queries and keys; None: ``d_model // num_heads``.
        d_v: size of a head's values; None: ``d_model // num_heads``.
        d_ff: hidden size of the MLP; None: ``4 * d_model``.
        dropout: dropout ratio after the attention's heads, after the MLP's hidden layer and
            after its output (0: none).
        activation: the MLP's hidden activation.
        positional_encoding: ``'none'``, ``'abs'`` (by the memory slot) or ``'rel'`` (by the
            query's position minus the slot's).
        add_positional_encoding: append each head's attended positional encoding to its
            result; ALF's default, turned off where ``positional_encoding`` is ``'none'``.
        scale_attention_score: scale the scores by ``d_k ** -0.5``.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        memory_size: int,
        d_k: int | None = None,
        d_v: int | None = None,
        d_ff: int | None = None,
        dropout: float = 0.0,
        activation: Callable = torch.relu_,
        positional_encoding: str = "abs",
        add_positional_encoding: bool = True,
        scale_attention_score: bool = True,
    ):
        super().__init__()
        if positional_encoding not in _POSITIONAL_ENCODINGS:
            raise ValueError(
                f"TransformerBlock: positional_encoding={positional_encoding!r} is not one of "
                f"{_POSITIONAL_ENCODINGS}"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"TransformerBlock: dropout={dropout!r} must be in [0, 1)")
        for name, value in (("d_model", d_model), ("num_heads", num_heads)):
            _check_positive(name, value)
        d_k = d_model // num_heads if d_k is None else d_k
        d_v = d_model // num_heads if d_v is None else d_v
        d_ff = 4 * d_model if d_ff is None else d_ff
        for name, value in (("memory_size", memory_size), ("d_k", d_k), ("d_v", d_v)):
            _check_positive(name, value)
        _check_positive("d_ff", d_ff)
        add_positional_encoding = add_positional_encoding and positional_encoding != "none"
        self._d_model, self._num_heads, self._memory_size = d_model, num_heads, memory_size
        self._d_k, self._d_v = d_k, d_v
        self._positional = positional_encoding
        self._add_positional_encoding = add_positional_encoding
        self._d_a = d_v + d_k if add_positional_encoding else d_v
        self._scale = d_k**-0.5 if scale_attention_score else 1.0
        # ALF's parameter names and layouts ([in, out]), so that its state dicts load
        self._q_proj = nn.Parameter(torch.empty(d_model, num_heads * d_k))
        self._k_proj = nn.Parameter(torch.empty(d_model, num_heads * d_k))
        self._v_proj = nn.Parameter(torch.empty(d_model, num_heads * d_v))
        self._o_proj = nn.Parameter(torch.empty(num_heads * self._d_a, d_model))
        self._qk_bias = nn.Parameter(torch.empty(num_heads, d_k))
        self._positional_encoding = self._qp_bias = None
        if positional_encoding != "none":
            rows = 2 * memory_size - 1 if positional_encoding == "rel" else memory_size
            self._positional_encoding = nn.Parameter(torch.empty(rows, d_k))
            self._qp_bias = nn.Parameter(torch.empty(num_heads, d_k))
        mlp = [FC(d_model, d_ff, activation)]
        if dropout > 0:
            mlp.append(nn.Dropout(dropout))
        mlp.append(FC(d_ff, d_model))
        if dropout > 0:
            mlp.append(nn.Dropout(dropout))
        self._mlp = nn.Sequential(*mlp)
        self._dropout = nn.Dropout(dropout) if dropout > 0 else Identity()
        self._norm1 = nn.LayerNorm(d_model)
        self._norm2 = nn.LayerNorm(d_model)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Projections: Xavier uniform; biases: zeros; positional encoding: uniform in
        ``[-0.1, 0.1]``; the MLP's layers and the norms: their own initializations."""
        for proj in (self._q_proj, self._k_proj, self._v_proj, self._o_proj):
            nn.init.xavier_uniform_(proj)
        nn.init.zeros_(self._qk_bias)
        if self._positional_encoding is not None:
            nn.init.uniform_(self._positional_encoding, -0.1, 0.1)
            nn.init.zeros_(self._qp_bias)
        for module in (*self._mlp, self._norm1, self._norm2):
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()

    @property
    def d_model(self) -> int:
        return self._d_model

    @property
    def memory_size(self) -> int:
        return self._memory_size

    def positional_encodings(self, m: int, n: int) -> torch.Tensor | None:
        """``p(i, j)`` of the module doc for ``m`` queries and ``n`` slots: ``[n, d_k]``
        (absolute: the same for every query), ``[m, n, d_k]`` (relative) or None."""
        table = self._positional_encoding
        if table is None:
            return None
        if self._positional == "abs":
            return table[:n]
        rows = torch.arange(m, device=table.device).unsqueeze(1)
        cols = torch.arange(n, device=table.device)
        return table[self._memory_size - 1 + rows - cols]

    def _check(self, memory, query, mask) -> None:
        d, size = self._d_model, self._memory_size
        if memory.ndim != 3 or memory.shape[2] != d:
            raise ValueError(
                f"TransformerBlock: memory of shape {tuple(memory.shape)}, expected [B, N, {d}]"
            )
        if query.ndim != 3 or query.shape[2] != d or query.shape[0] != memory.shape[0]:
            raise ValueError(
                f"TransformerBlock: query of shape {tuple(query.shape)}, expected "
                f"[{memory.shape[0]}, M, {d}] or [{memory.shape[0]}, {d}]"
            )
        if max(memory.shape[1], query.shape[1]) > size:
            raise ValueError(
                f"TransformerBlock: memory length {memory.shape[1]} or query length "
                f"{query.shape[1]} exceeds memory_size={size}"
            )
        b, m, n = query.shape[0], query.shape[1], memory.shape[1]
        if mask is not None and tuple(mask.shape) not in ((b, n), (b, m, n)):
            raise ValueError(
                f"TransformerBlock: mask of shape {tuple(mask.shape)}, expected [{b}, {n}] or "
                f"[{b}, {m}, {n}]"
            )

    def forward(self, memory, query=None, mask=None):
        """The block's output for each query.

        Args:
            memory: ``[B, N, d_model]`` with ``N <= memory_size``.
            query: ``[B, M, d_model]`` or ``[B, d_model]`` (one query); None: the memory
                attends to itself.
            mask: bool ``[B, N]`` or ``[B, M, N]``; True where a query must not read the
                slot. A query with every slot masked gets NaN (its softmax has no term).
        Returns:
            a tensor of the query's shape.
        """
        one_query = query is not None and query.ndim == 2
        if one_query:
            query = query.unsqueeze(1)
        residual = memory if query is None else query
        self._check(memory, residual, mask)
        memory = self._norm1(memory)
        query = memory if query is None else self._norm1(query)
        y = residual + self._attention(memory, query, mask)
        z = y + self._mlp(self._norm2(y))
        return z.squeeze(1) if one_query else z

    def _heads(self, x, proj, size: int):
        """``[B, L, d_model] @ [d_model, H * size]`` as ``[B, H, L, size]``."""
        b, length = x.shape[:2]
        return (x @ proj).view(b, length, self._num_heads, size).transpose(1, 2)

    def _attention(self, memory, query, mask):
        """``[B, M, d_model]``: the heads' results through the output projection."""
        b, m, n = query.shape[0], query.shape[1], memory.shape[1]
        q = self._heads(query, self._q_proj, self._d_k)  # [B, H, M, d_k]
        k = self._heads(memory, self._k_proj, self._d_k)  # [B, H, N, d_k]
        v = self._heads(memory, self._v_proj, self._d_v)  # [B, H, N, d_v]
        scores = (q + self._qk_bias.unsqueeze(1)) @ k.transpose(2, 3)  # [B, H, M, N]
        pos = self.positional_encodings(m, n)
        if pos is not None:
            qp = q + self._qp_bias.unsqueeze(1)
            if pos.ndim == 2:  # [N, d_k]
                scores = scores + qp @ pos.t()
            else:  # [M, N, d_k]: query m's scores against its own row of encodings
                scores = scores + (qp.unsqueeze(3) @ pos.transpose(1, 2)).squeeze(3)
        if self._scale != 1.0:
            scores = scores * self._scale
        if mask is not None:
            mask = mask.unsqueeze(1) if mask.ndim == 2 else mask  # [B, 1 or M, N]
            scores = scores.masked_fill(mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # [B, H, M, N]
        result = weights @ v  # [B, H, M, d_v]
        if self._add_positional_encoding:
            if pos.ndim == 2:
                attended = weights @ pos
            else:
                attended = (weights.unsqueeze(3) @ pos).squeeze(3)
            result = torch.cat([result, attended], dim=-1)  # [B, H, M, d_v + d_k]
        result = result.transpose(1, 2).reshape(b, m, self._num_heads * self._d_a)
        return self._dropout(result) @ self._o_proj
