"""``EntropyTargetAlgorithm``: an entropy bonus whose weight alpha keeps the policy's
entropy near a target (ALF's ``Agent(enforce_entropy_target=True)``).

The policy's loss gets ``-alpha * H(pi(.|s))`` per step; alpha is not learned by gradient
but adjusted after each update from the average entropy of the last ``average_window``
updates, in three stages (as ALF):

0. *init* (only when ``max_entropy`` is None): the first ``average_window`` updates
   measure the initial entropy ``H0``; ``max_entropy = min(0.8 H0, H0 / 0.8)``. Until the
   entropy falls below ``max_entropy``, ``log alpha`` moves by ``very_slow_update_rate``
   per update: down while the entropy rises, up (by half as much) while it falls.
1. *free*: alpha stays; the stage ends when the entropy falls below the target.
2. *adjust*: ``log alpha += rate * ((below + above / 2) * decreasing - (above + below / 2)
   * increasing)`` where ``below``/``above`` say on which side of the target the entropy is
   and ``decreasing``/``increasing`` how it moved since the previous update; ``rate``
   starts at ``fast_update_rate``, is multiplied by 0.9 each time the entropy crosses the
   target (never below ``slow_update_rate``), and is reset to ``fast_update_rate`` when
   the entropy falls far below the target (under half of a positive target, or twice a
   negative one). So alpha grows while the entropy is low and falling and shrinks while
   it is high and rising.

``log alpha`` never goes below ``log(min_alpha)``. The state lives in buffers, so it is
checkpointed with the algorithm that owns this one.

``SGDEntropyTargetAlgorithm`` (ALF's, used by its ``ppo_bipedal_walker`` confs through
``Agent.entropy_target_cls``) learns ``log alpha`` by gradient descent instead, as SAC
learns its temperature (its class doc).
"""

from __future__ import annotations

import math

import torch

import alf
import alf.nest as nest
import alf.summary
from alf.algorithms.algorithm import Algorithm
from alf.configuration.argtypes import Count
from alf.utils.dist_utils import calc_default_target_entropy
from alf.utils.schedulers import as_scheduler

_INIT, _FREE, _ADJUST = 0, 1, 2


@alf.configurable
class EntropyTargetAlgorithm(Algorithm):
    """Adjusts the entropy-bonus weight alpha (module doc).

    Args:
        action_spec: nest of bounded action specs (for the default target).
        initial_alpha: alpha at the start.
        skip_free_stage: go straight to the adjust stage.
        max_entropy: the entropy the init stage brings the policy under (None:
            measured, see the module doc; a number skips the measurement).
        target_entropy: the target (None: ``calc_default_target_entropy`` summed over
            the action specs).
        very_slow_update_rate: step of ``log alpha`` in the init stage.
        slow_update_rate: smallest step of ``log alpha`` in the adjust stage.
        fast_update_rate: largest step of ``log alpha`` in the adjust stage.
        min_alpha: lower bound of alpha (<= 0: none).
        average_window: number of updates the entropy is averaged over.
        debug_summaries: write alpha, the stage and the entropy.
        name: name in summaries.
    """

    def __init__(
        self,
        action_spec,
        initial_alpha: float = 0.1,
        skip_free_stage: bool = False,
        max_entropy: float | None = None,
        target_entropy: float | None = None,
        very_slow_update_rate: float = 0.001,
        slow_update_rate: float = 0.01,
        fast_update_rate: float = math.log(2),
        min_alpha: float = 1e-4,
        average_window: int = 2,
        debug_summaries: bool = False,
        name: str = "EntropyTargetAlgorithm",
    ):
        super().__init__(debug_summaries=debug_summaries, name=name)
        if initial_alpha <= 0 or average_window < 1:
            raise ValueError(
                f"{name}: initial_alpha must be > 0 and average_window >= 1, got "
                f"{initial_alpha} and {average_window}"
            )
        if target_entropy is None:
            target_entropy = sum(calc_default_target_entropy(s) for s in nest.flatten(action_spec))
        if max_entropy is not None and target_entropy > max_entropy:
            raise ValueError(
                f"{name}: target_entropy {target_entropy} is above max_entropy {max_entropy}"
            )
        self._target = float(target_entropy)
        self._very_slow = very_slow_update_rate
        self._slow = slow_update_rate
        self._fast = fast_update_rate
        self._min_log_alpha = math.log(min_alpha) if min_alpha > 0 else -100.0
        self._window = average_window
        stage = _ADJUST if skip_free_stage else (_FREE if max_entropy is not None else _INIT)
        self.register_buffer("_log_alpha", torch.tensor(math.log(initial_alpha)))
        self.register_buffer("_stage", torch.tensor(stage))
        self.register_buffer("_update_rate", torch.tensor(float(fast_update_rate)))
        self.register_buffer("_max_entropy", torch.tensor(float(max_entropy or 0.0)))
        self.register_buffer("_measured", torch.tensor(max_entropy is not None))
        self.register_buffer("_above", torch.tensor(-1))  # -1: no side seen yet
        self.register_buffer("_recent", torch.zeros(average_window))
        self.register_buffer("_count", torch.tensor(0))

    @property
    def alpha(self) -> float:
        """The current weight of the entropy bonus."""
        return math.exp(float(self._log_alpha))

    @property
    def target_entropy(self) -> float:
        return self._target

    @property
    def stage(self) -> int:
        """0: init, 1: free, 2: adjust (module doc)."""
        return int(self._stage)

    def loss(self, entropy: torch.Tensor, valid_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The bonus term ``-alpha * entropy`` (same shape as ``entropy``; gradient flows
        through ``entropy``) with alpha before this update's adjustment; then alpha is
        adjusted from the mean entropy over ``valid_mask`` (module doc)."""
        alpha = self.alpha
        with torch.no_grad():
            values = entropy.detach()
            if valid_mask is not None:
                values = values[valid_mask.to(torch.bool).expand_as(values)]
            if values.numel() > 0:
                self.adjust_alpha(float(values.mean()))
        return -alpha * entropy

    def adjust_alpha(self, entropy: float) -> None:
        """One adjustment of ``log alpha`` for the mean entropy ``entropy`` of an update."""
        first = int(self._count) == 0
        previous = None if first else self._average()
        self._recent[int(self._count) % self._window] = entropy
        self._count += 1
        average = self._average()
        previous = average if first else previous  # (both read back as float32)
        stage = int(self._stage)
        if stage == _INIT:
            self._init_stage(average, previous)
        elif stage == _FREE:
            if average < self._target:
                self._stage.fill_(_ADJUST)
                self._above.fill_(0)
        else:
            self._adjust_stage(entropy, average, previous)
        if self._debug_summaries and alf.summary.should_record_summaries():
            alf.summary.scalar(f"{self._name}/alpha", self.alpha)
            alf.summary.scalar(f"{self._name}/stage", float(self._stage))
            alf.summary.scalar(f"{self._name}/entropy", entropy)

    def _average(self) -> float:
        count = min(int(self._count), self._window)
        return float(self._recent[:count].mean())

    def _init_stage(self, average: float, previous: float) -> None:
        if not bool(self._measured):
            if int(self._count) >= self._window:  # the initial entropy is measured
                self._max_entropy.fill_(min(0.8 * average, average / 0.8))
                self._measured.fill_(True)
            return
        if average < float(self._max_entropy):
            self._stage.fill_(_FREE)
            return
        step = 0.5 * self._very_slow if average < previous else -self._very_slow
        self._set_log_alpha(float(self._log_alpha) + step)

    def _adjust_stage(self, entropy: float, average: float, previous: float) -> None:
        above = average > self._target
        rate = float(self._update_rate)
        if int(self._above) >= 0 and above != bool(self._above):  # crossed the target
            rate *= 0.9
        rate = max(rate, self._slow)
        far_below = 0.5 * self._target if self._target > 0 else 2.0 * self._target
        if entropy < far_below:
            rate = self._fast
        self._update_rate.fill_(rate)
        self._above.fill_(int(above))
        high = 1.0 if above else 0.0
        low = 1.0 - high
        decreasing = 1.0 if average < previous else 0.0
        change = (low + 0.5 * high) * decreasing - (high + 0.5 * low) * (1.0 - decreasing)
        self._set_log_alpha(float(self._log_alpha) + rate * change)

    def _set_log_alpha(self, value: float) -> None:
        self._log_alpha.fill_(max(value, self._min_log_alpha))


@alf.configurable
class SGDEntropyTargetAlgorithm(Algorithm):
    r"""ALF's ``SGDEntropyTargetAlgorithm``: the weight alpha of the entropy bonus learned by
    gradient descent so that the policy's entropy tracks a target, as SAC learns its
    temperature.

    Each update (``loss``), with :math:`\bar H` the mean entropy over the update's valid
    steps and :math:`H_w` the mean of the last ``window_size`` such means (this one
    included), the loss of every step is

    .. math::

        (H_w - \bar{\mathcal H})\,\log\alpha \;-\; \alpha\, H(\pi(\cdot|s))

    with :math:`H_w - \bar{\mathcal H}` and :math:`\alpha = e^{\log\alpha}` held constant
    (detached): the entropy bonus trains the policy, and the (masked mean) loss has the
    gradient :math:`H_w - \bar{\mathcal H}` with respect to :math:`\log\alpha`, so alpha
    falls while the entropy is above the target and grows while it is below. The bonus
    uses alpha before this update's step. ``log_alpha`` is a parameter: this algorithm's
    ``optimizer`` trains it, else the default optimizer of the algorithm that owns it
    (ALF's ``Agent.optimizer``). It and the window of entropies are checkpointed with
    that algorithm.

    As ALF's, but the entropies averaged are those of the valid steps (the mask the
    owning algorithm gives, ``step_type != LAST``) where ALF's average every step of the
    minibatch; an update with no valid step leaves the window as it is and, while the
    window is empty, gives ``log_alpha`` no gradient (ALF's empty average is 0).

    Args:
        action_spec: nest of bounded action specs (for the default target).
        initial_alpha: alpha at the start (> 0).
        target_entropy: the target :math:`\bar{\mathcal H}`: a number, a schedule
            (``alf.utils.schedulers``, called at every update), or None for
            ``calc_default_target_entropy`` summed over the action specs.
        window_size: number of updates whose mean entropies are averaged (>= 1).
        optimizer: optimizer of ``log_alpha`` (None: the owning algorithm's).
        debug_summaries: write alpha and the target entropy.
        name: name in summaries.
    """

    def __init__(
        self,
        action_spec,
        initial_alpha: float = 0.1,
        target_entropy=None,
        window_size: Count = 1,
        optimizer=None,
        debug_summaries: bool = False,
        name: str = "SGDEntropyTargetAlgorithm",
    ):
        super().__init__(optimizer=optimizer, debug_summaries=debug_summaries, name=name)
        if not initial_alpha > 0:
            raise ValueError(f"{name}: initial_alpha must be > 0, got {initial_alpha}")
        if int(window_size) != window_size or window_size < 1:
            raise ValueError(f"{name}: window_size must be an integer >= 1, got {window_size}")
        if target_entropy is None:
            target_entropy = sum(calc_default_target_entropy(s) for s in nest.flatten(action_spec))
        self._target_entropy = as_scheduler(target_entropy)
        self._window = int(window_size)
        self._log_alpha = torch.nn.Parameter(torch.tensor(math.log(initial_alpha)))
        self.register_buffer("_recent", torch.zeros(self._window))  # newest last
        self.register_buffer("_count", torch.tensor(0))

    @property
    def log_alpha(self) -> torch.nn.Parameter:
        """The parameter ``log alpha``."""
        return self._log_alpha

    @property
    def alpha(self) -> float:
        """The current weight of the entropy bonus."""
        return math.exp(float(self._log_alpha.detach()))

    @property
    def target_entropy(self) -> float:
        """The target entropy now (a schedule's current value)."""
        return float(self._target_entropy())

    def average_entropy(self) -> torch.Tensor:
        """``H_w``: the mean of the window's entropies (0 while it is empty)."""
        size = torch.clamp(self._count, max=self._window)
        in_window = torch.arange(self._window, device=size.device) >= self._window - size
        return (self._recent * in_window).sum() / torch.clamp(size, min=1)

    def loss(self, entropy: torch.Tensor, valid_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The per-step loss (class doc), the shape of ``entropy``; the window of mean
        entropies is updated first, from the steps where ``valid_mask`` is true.

        No host synchronization: everything stays on the entropy's device.
        """
        with torch.no_grad():
            values = entropy.detach()
            if valid_mask is None:
                valid = torch.ones_like(values)
            else:
                valid = valid_mask.to(values.dtype).expand_as(values)
            num = valid.sum()
            mean = (values * valid).sum() / torch.clamp(num, min=1)
            has_valid = num > 0
            shifted = torch.cat([self._recent[1:], mean.reshape(1).to(self._recent.dtype)])
            self._recent.copy_(torch.where(has_valid, shifted, self._recent))
            self._count.add_(has_valid.to(self._count.dtype))
            target = float(self._target_entropy())
            gap = torch.where(self._count > 0, self.average_entropy() - target, 0.0)
        log_alpha = self._log_alpha
        alpha = log_alpha.detach().exp()
        alpha_loss = gap * log_alpha
        if self._debug_summaries and alf.summary.should_record_summaries():
            alf.summary.scalar(f"{self._name}/alpha", alpha)
            alf.summary.scalar(f"{self._name}/target_entropy", target)
        return alpha_loss - alpha * entropy
