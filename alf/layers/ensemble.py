"""BatchEnsemble layers (Wen et al. 2020, "BatchEnsemble: an alternative approach to efficient
ensemble and lifelong learning"): ``FCBatchEnsemble``, with ALF's arguments.

The ``ensemble_size`` members share one weight ``W``; member ``k`` owns two vectors ``r_k``
(input size) and ``s_k`` (output size), and its weight is ``W * outer(s_k, r_k)``, computed
as ``((x * r_k) W^T) * s_k`` (plus member ``k``'s bias). Each sample of a batch goes through
the member its ensemble id names; the ids are drawn at random where the caller gives none.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

import alf
from alf.layers.dense import FC
from alf.utils.math_ops import identity


def _random_signs(param) -> None:
    """Fill ``param`` with -1 and +1, each with probability 1/2."""
    param.copy_(torch.randint(2, param.shape, device=param.device) * 2.0 - 1.0)


@alf.configurable
@alf.repr_wrapper
class FCBatchEnsemble(FC):
    """An ``FC`` whose ``ensemble_size`` members share the weight (module doc).

    ``r`` and ``s`` start as random signs (the paper's appendix), the members' biases uniform
    in ``[-bias_init_range, bias_init_range]``, the shared weight as an ``FC``'s.

    Args:
        input_size, output_size: as ``FC``'s.
        ensemble_size: number of members.
        output_ensemble_ids: ``forward`` returns ``(output, ensemble_ids)``; else the output.
        activation: applied last.
        use_bias: a bias per member (the shared weight has none).
        use_bn: batch normalization before the activation (shifting only with ``use_bias``).
        use_ln: layer normalization before the activation (shifting only with ``use_bias``).
        kernel_initializer: ``init(weight)`` of the shared weight; None: ``FC``'s default.
        kernel_init_gain: extra gain of the default initialization.
        bias_init_range: the members' biases start uniform in ``[-range, range]``.
        ensemble_group: an int set as ``ensemble_group`` on ``r``, ``s`` and the members'
            biases (ALF's particle-based optimizers group parameters by it).
    """

    def __init__(
        self,
        input_size: int,
        output_size: int,
        ensemble_size: int,
        output_ensemble_ids: bool = True,
        activation: Callable = identity,
        use_bias: bool = True,
        use_bn: bool = False,
        use_ln: bool = False,
        kernel_initializer: Callable | None = None,
        kernel_init_gain: float = 1.0,
        bias_init_range: float = 0.0,
        ensemble_group: int = 0,
    ):
        if not isinstance(ensemble_group, int):
            raise ValueError(f"FCBatchEnsemble: ensemble_group={ensemble_group!r} must be an int")
        if not isinstance(ensemble_size, int) or ensemble_size <= 0:
            raise ValueError(f"FCBatchEnsemble: ensemble_size={ensemble_size!r} must be positive")
        super().__init__(
            input_size, output_size, activation=activation, use_bias=False, use_bn=use_bn,
            use_ln=use_ln, kernel_initializer=kernel_initializer,
            kernel_init_gain=kernel_init_gain,
        )  # fmt: skip
        self._ensemble_size = ensemble_size
        self._output_ensemble_ids = output_ensemble_ids
        self._use_ensemble_bias = use_bias
        self._bias_init_range = bias_init_range
        if use_ln:  # a shift exactly where the members have biases
            self._ln = nn.LayerNorm(output_size, bias=use_bias)
        if self._bn is not None and not use_bias:
            self._bn.bias.requires_grad_(False)
        self._r = nn.Parameter(torch.empty(ensemble_size, input_size))
        self._s = nn.Parameter(torch.empty(ensemble_size, output_size))
        self._ensemble_bias = None
        if use_bias:
            self._ensemble_bias = nn.Parameter(torch.empty(ensemble_size, output_size))
        for param in (self._r, self._s, self._ensemble_bias):
            if param is not None:
                param.ensemble_group = ensemble_group
        self.reset_parameters()

    @property
    def ensemble_size(self) -> int:
        return self._ensemble_size

    @property
    def r(self) -> nn.Parameter:
        """``[ensemble_size, input_size]``: the members' input scales."""
        return self._r

    @property
    def s(self) -> nn.Parameter:
        """``[ensemble_size, output_size]``: the members' output scales."""
        return self._s

    @property
    def ensemble_bias(self) -> nn.Parameter | None:
        """``[ensemble_size, output_size]``; None without ``use_bias``."""
        return self._ensemble_bias

    def reset_parameters(self) -> None:
        """Initialize every parameter again (class doc)."""
        super().reset_parameters()
        if "_r" not in self._parameters:  # FC's construction calls this before they exist
            return
        with torch.no_grad():
            _random_signs(self._r)
            _random_signs(self._s)
            if self._ensemble_bias is not None:
                span = self._bias_init_range
                nn.init.uniform_(self._ensemble_bias, -span, span)
            if self._bn is not None and self._ensemble_bias is None:
                self._bn.bias.zero_()

    def forward(self, inputs):
        """The output of each sample's member.

        Args:
            inputs: ``x`` of shape ``[B, ..., input_size]``, or ``(x, ensemble_ids)`` with
                int ids ``[B]`` in ``[0, ensemble_size)``; without ids each sample gets a
                random member.
        Returns:
            ``(output, ensemble_ids)`` with ``output`` of shape ``[B, ..., output_size]``
            where ``output_ensemble_ids``; else the output.
        """
        if isinstance(inputs, tuple):
            x, ids = inputs
        else:
            x = inputs
            ids = torch.randint(self._ensemble_size, (x.shape[0],), device=x.device)
        if ids.shape != (x.shape[0],):
            raise ValueError(
                f"FCBatchEnsemble: ensemble_ids of shape {tuple(ids.shape)}, expected "
                f"[{x.shape[0]}]"
            )
        lead = (x.shape[0],) + (1,) * (x.ndim - 2)  # a member's vectors broadcast per sample
        y = F.linear(x * self._r[ids].view(*lead, -1), self._weight)
        y = y * self._s[ids].view(*lead, -1)
        if self._ensemble_bias is not None:
            y = y + self._ensemble_bias[ids].view(*lead, -1)
        for norm in (self._ln, self._bn):
            if norm is not None:
                y = norm(y)
        y = self._activation(y)
        return (y, ids) if self._output_ensemble_ids else y

    def make_parallel(self, n: int):
        raise ValueError("FCBatchEnsemble.make_parallel: the layer is an ensemble already")
