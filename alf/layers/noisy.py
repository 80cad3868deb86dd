r"""``NoisyFC``: a fully connected layer with learned factorised Gaussian noise on its weights.

Fortunato et al. 2018, "Noisy Networks for Exploration", section 3 ("factorised Gaussian
noise"). The layer has means :math:`\mu^w` ``[q, p]``, :math:`\mu^b` ``[q]`` and noise scales
:math:`\sigma^w`, :math:`\sigma^b` (all trained), and computes

.. math::

    y = (\mu^w + \sigma^w \odot \varepsilon^w)\, x + \mu^b + \sigma^b \odot \varepsilon^b,
    \qquad \varepsilon^w_{ij} = f(\varepsilon^{out}_i)\, f(\varepsilon^{in}_j),
    \quad \varepsilon^b_i = f(\varepsilon^{out}_i),\quad f(u) = \operatorname{sgn}(u)\sqrt{|u|},

with :math:`\varepsilon^{in}` ``[p]`` and :math:`\varepsilon^{out}` ``[q]`` standard normal:
``p + q`` draws instead of ``p q``. The product is evaluated without forming
:math:`\varepsilon^w`: :math:`(\sigma^w \odot \varepsilon^w) x = f(\varepsilon^{out}) \odot
(\sigma^w (f(\varepsilon^{in}) \odot x))`.

**When the noise changes.** One noise sample is held (``epsilon_in``, ``epsilon_out``) and
shared by every row of a batch; ``reset_noise()`` draws a new one (``epsilon_in`` first, then
``epsilon_out``, from torch's global generator, so a seeded run repeats). The user of the layer
decides when: ``DqnAlgorithm`` draws new noise for the online network before every rollout step
and before every update, and independent noise for the target network before every update
(the paper's NoisyNet-DQN). **In eval mode** (``module.eval()``: the evaluator, ``play``,
exported policies) the layer is the mean network :math:`y = \mu^w x + \mu^b`, as ALF's
``NoisyFC`` (``is_eval()``) and Dopamine's ``NoisyNetwork(eval_mode=True)`` do.

**Initialization** (the paper's, for factorised noise): :math:`\mu^w, \mu^b \sim
U[-1/\sqrt p, 1/\sqrt p]` and :math:`\sigma^w = \sigma^b = \sigma_0 / \sqrt p` with
:math:`\sigma_0` = ``std_init`` (0.5). ALF's ``alf.networks.NoisyFC`` is a different design:
a stateful network with per-sample noise kept in its recurrent state and renewed with
probability ``new_noise_prob``; this layer keeps ALF's argument names where they mean the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

import alf
from alf.utils.math_ops import identity


def _scaled_noise(size: int, device) -> torch.Tensor:
    """:math:`f(u) = \\operatorname{sgn}(u)\\sqrt{|u|}` of ``size`` standard normal draws."""
    u = torch.randn(size, device=device)
    return u.sign() * u.abs().sqrt()


@alf.configurable
@alf.repr_wrapper
class NoisyFC(nn.Module):
    """``activation(noisy linear(x))`` on ``[B, ..., input_size]`` (module doc).

    Args:
        input_size: size ``p`` of the last input dimension.
        output_size: size ``q`` of the output's last dimension.
        activation: applied last (identity by default).
        std_init: :math:`\\sigma_0`; the noise scales start at ``std_init / sqrt(input_size)``.
        kernel_initializer: ``init(weight)`` of :math:`\\mu^w` instead of the paper's uniform.
    """

    def __init__(
        self,
        input_size: int,
        output_size: int,
        activation: Callable = identity,
        std_init: float = 0.5,
        kernel_initializer: Callable | None = None,
    ):
        super().__init__()
        self._input_size, self._output_size = input_size, output_size
        self._activation = activation
        self._std_init = std_init
        self._kernel_initializer = kernel_initializer
        self._weight = nn.Parameter(torch.empty(output_size, input_size))
        self._bias = nn.Parameter(torch.empty(output_size))
        self._weight_sigma = nn.Parameter(torch.empty(output_size, input_size))
        self._bias_sigma = nn.Parameter(torch.empty(output_size))
        # the noise in use: not part of a checkpoint (it is drawn anew before it is used)
        self.register_buffer("_epsilon_in", torch.zeros(input_size), persistent=False)
        self.register_buffer("_epsilon_out", torch.zeros(output_size), persistent=False)
        self.reset_parameters()
        self.reset_noise()

    @property
    def input_size(self) -> int:
        return self._input_size

    @property
    def output_size(self) -> int:
        return self._output_size

    @property
    def weight(self) -> nn.Parameter:
        """:math:`\\mu^w` ``[output_size, input_size]``."""
        return self._weight

    @property
    def bias(self) -> nn.Parameter:
        """:math:`\\mu^b` ``[output_size]``."""
        return self._bias

    @property
    def weight_sigma(self) -> nn.Parameter:
        return self._weight_sigma

    @property
    def bias_sigma(self) -> nn.Parameter:
        return self._bias_sigma

    @property
    def epsilon_in(self) -> torch.Tensor:
        """:math:`f(\\varepsilon^{in})` ``[input_size]`` in use."""
        return self._epsilon_in

    @property
    def epsilon_out(self) -> torch.Tensor:
        """:math:`f(\\varepsilon^{out})` ``[output_size]`` in use (also the bias noise)."""
        return self._epsilon_out

    def reset_parameters(self) -> None:
        """The paper's initialization (module doc)."""
        bound = 1.0 / math.sqrt(self._input_size)
        with torch.no_grad():
            if self._kernel_initializer is not None:
                self._kernel_initializer(self._weight)
            else:
                self._weight.uniform_(-bound, bound)
            self._bias.uniform_(-bound, bound)
            self._weight_sigma.fill_(self._std_init * bound)
            self._bias_sigma.fill_(self._std_init * bound)

    @torch.no_grad()
    def reset_noise(self) -> None:
        """Draw a new noise sample (``epsilon_in``, then ``epsilon_out``)."""
        device = self._weight.device
        self._epsilon_in.copy_(_scaled_noise(self._input_size, device))
        self._epsilon_out.copy_(_scaled_noise(self._output_size, device))

    def forward(self, x):
        y = F.linear(x, self._weight, self._bias)
        if self.training:
            noise = F.linear(x * self._epsilon_in, self._weight_sigma, self._bias_sigma)
            y = y + noise * self._epsilon_out
        return self._activation(y)

    def make_parallel(self, n: int):
        raise ValueError("NoisyFC has no parallel form")


def reset_noise(module: nn.Module) -> None:
    """``reset_noise()`` of every ``NoisyFC`` in ``module`` (none: nothing happens)."""
    for layer in noisy_layers(module):
        layer.reset_noise()


def noisy_layers(module: nn.Module) -> list[NoisyFC]:
    """The ``NoisyFC`` layers of ``module``, in ``modules()`` order."""
    return [m for m in module.modules() if isinstance(m, NoisyFC)]
