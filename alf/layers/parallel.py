"""Ensembles of layers: ``make_parallel_net(module, n)`` and the specs and inputs of a parallel
batch ``[B, n, ...]``.

A layer with its own ``make_parallel`` (``FC``, ``Conv2D``, the parameterless layers, the
combiners, the containers) computes its ``n`` replicas at once; any other module is
replicated ``n`` times (fresh parameters) by ``NaiveParallelLayer``, a loop over the replicas.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

import alf.nest as nest
from alf.tensor_specs import TensorSpec


def make_parallel_spec(specs, n: int):
    """``specs`` with a replica dimension ``n`` in front of each leaf's shape."""
    return nest.map_structure(lambda s: TensorSpec((n, *s.shape), s.dtype), specs)


def make_parallel_input(inputs, n: int):
    """``[B, ...]`` inputs as ``[B, n, ...]``: every replica reads the same rows (a view)."""
    return nest.map_structure(lambda x: x.unsqueeze(1).expand(x.shape[0], n, *x.shape[1:]), inputs)


def reset_parameters(module: nn.Module) -> None:
    """Initialize ``module``'s parameters again (each submodule's ``reset_parameters``);
    a ``ValueError`` naming a module with parameters it cannot reset."""
    if hasattr(module, "reset_parameters"):
        module.reset_parameters()
        return
    for child in module.children():
        reset_parameters(child)
    if any(True for _ in module.parameters(recurse=False)):
        raise ValueError(f"cannot reset the parameters of a {type(module).__name__}")


class NaiveParallelLayer(nn.Module):
    """``n`` copies of a layer, each initialized anew, applied in a loop: replica ``i`` reads
    ``x[:, i]`` of a ``[B, n, ...]`` nest; the outputs are stacked as ``[B, n, ...]``."""

    def __init__(self, module: nn.Module, n: int):
        super().__init__()
        self._replicas = nn.ModuleList()
        for _ in range(n):
            replica = copy.deepcopy(module)
            reset_parameters(replica)
            self._replicas.append(replica)

    def forward(self, x):
        outputs = [
            layer(nest.map_structure(lambda t, i=i: t[:, i], x))
            for i, layer in enumerate(self._replicas)
        ]
        return nest.map_structure(lambda *ys: torch.stack(ys, dim=1), *outputs)


def make_parallel_net(module: nn.Module, n: int) -> nn.Module:
    """The module that computes ``n`` independent replicas of ``module`` on ``[B, n, ...]``
    (module doc)."""
    if hasattr(module, "make_parallel"):
        return module.make_parallel(n)
    return NaiveParallelLayer(module, n)
