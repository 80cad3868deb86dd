r"""``OUProcess``: temporally correlated exploration noise (ALF's ``alf.networks.OUProcess``).

A zero-mean Ornstein-Uhlenbeck process in discrete time, as DDPG explores with
(Lillicrap et al. 2016, "Continuous control with deep reinforcement learning"):

.. math::  x_{t+1} = (1 - \text{damping})\, x_t + \mathcal N(0, \text{stddev}^2)

``damping = 0`` is an undamped random walk, ``damping = 1`` uncorrelated Gaussian noise.
The process is a ``Network`` whose state is the noise: ``forward(state)`` returns
``(x_{t+1}, x_{t+1})``, the noise and the new state.
"""

from __future__ import annotations

import torch

import alf
import alf.nest as nest
from alf.networks.network import Network


@alf.configurable
class OUProcess(Network):
    """Ornstein-Uhlenbeck noise shaped like ``state_spec`` (see the module doc).

    Args:
        state_spec: nest of ``TensorSpec`` of the noise (e.g. the action spec).
        damping: the pull towards 0 per step, in [0, 1].
        stddev: standard deviation of the Gaussian increment.
        name: name of the network.
    """

    def __init__(self, state_spec, damping: float = 0.15, stddev: float = 0.2, name="OUProcess"):
        if not 0.0 <= damping <= 1.0:
            raise ValueError(f"OUProcess: damping must be in [0, 1], got {damping}")
        if stddev < 0:
            raise ValueError(f"OUProcess: stddev must be >= 0, got {stddev}")
        super().__init__(input_tensor_spec=(), state_spec=state_spec, name=name)
        self._keep = 1.0 - damping
        self._stddev = stddev

    def forward(self, state):
        """``[B, ...]`` noise state ``->`` ``(noise, new state)`` (the same tensors)."""

        def _step(x):
            return self._keep * x + self._stddev * torch.randn_like(x)

        state = nest.map_structure(_step, state)
        return state, state
