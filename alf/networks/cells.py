"""ALF's recurrent cells as networks: ``LSTMCell`` and ``GRUCell``, one step each, with their
state in ``state_spec`` (so a container holding one carries it, and the state is zeroed
where an episode starts, as every network's state is)."""

from __future__ import annotations

from torch import nn

from alf.networks.network import Network
from alf.tensor_specs import TensorSpec


class LSTMCell(Network):
    """One step of an LSTM (torch's ``nn.LSTMCell``): ``[B, input_size]`` →
    ``[B, hidden_size]``, the state ``(h, c)``; the output is ``h``.

    Args:
        input_size: features of the input.
        hidden_size: features of ``h`` and ``c``.
        name: name of the network.
    """

    def __init__(self, input_size: int, hidden_size: int, name: str = "LSTMCell"):
        hidden = TensorSpec((hidden_size,))
        super().__init__(TensorSpec((input_size,)), (hidden, hidden), name)
        self._cell = nn.LSTMCell(input_size, hidden_size)
        self._output_spec = hidden

    def forward(self, inputs, state):
        h, c = self._cell(inputs, state)
        return h, (h, c)


class GRUCell(Network):
    """One step of a GRU (torch's ``nn.GRUCell``): ``[B, input_size]`` → ``[B, hidden_size]``,
    which is also the state.

    Args:
        input_size: features of the input.
        hidden_size: features of the state.
        name: name of the network.
    """

    def __init__(self, input_size: int, hidden_size: int, name: str = "GRUCell"):
        hidden = TensorSpec((hidden_size,))
        super().__init__(TensorSpec((input_size,)), hidden, name)
        self._cell = nn.GRUCell(input_size, hidden_size)
        self._output_spec = hidden

    def forward(self, inputs, state):
        h = self._cell(inputs, state)
        return h, h
