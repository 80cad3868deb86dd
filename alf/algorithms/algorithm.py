"""``Algorithm``: an ``nn.Module`` that owns its optimizers and updates itself from a loss.

Optimizers are given as ``OptimizerSpec``s (``alf.optimizers.Adam(lr=...)``), so a
conf can set them before parameters exist. ``add_optimizer(spec, modules)``
assigns specific sub-modules to their own optimizer (e.g. separate actor and
critic learning rates); every other trainable parameter of an algorithm goes to
that algorithm's default ``optimizer``. Sub-algorithms' optimizers are collected
by the top-level algorithm, so one ``update_with_gradient`` steps them all.
"""

from __future__ import annotations

import logging
import math

import torch
import torch.nn as nn

import alf.summary
from alf.data_structures import LossInfo
from alf.optimizers import OptimizerSpec
from alf.parallel import collectives
from alf.tensor_specs import zeros_from_spec
from alf.utils.finite import NonFiniteError
from alf.utils.math_ops import masked_mean
from alf.utils.mixed_precision import GRAD_SCALER_KEY, MixedPrecision
from alf.utils.torch_utils import reset_state_if_necessary  # noqa: F401 (its old home)

_OPTIMIZER_KEY = "_optimizers"


class Algorithm(nn.Module):
    """Base class of everything that learns.

    Args:
        train_state_spec: spec of the state ``train_step`` carries (``()``: none).
        rollout_state_spec: spec of the rollout state (``train_state_spec`` if None).
        predict_state_spec: spec of the predict state (``rollout_state_spec`` if None).
        optimizer: default ``OptimizerSpec`` for this algorithm's parameters that
            no ``add_optimizer`` claimed.
        debug_summaries: write extra summaries.
        name: used in summaries and messages.
    """

    def __init__(
        self,
        train_state_spec=(),
        rollout_state_spec=None,
        predict_state_spec=None,
        optimizer: OptimizerSpec | None = None,
        debug_summaries: bool = False,
        name: str = "Algorithm",
    ):
        super().__init__()
        self._name = name
        self._train_state_spec = train_state_spec
        self._rollout_state_spec = (
            train_state_spec if rollout_state_spec is None else rollout_state_spec
        )
        self._predict_state_spec = (
            self._rollout_state_spec if predict_state_spec is None else predict_state_spec
        )
        self._default_optimizer = optimizer
        self._module_optimizers: list[tuple[OptimizerSpec, list[nn.Module]]] = []
        self._optimizers: list[tuple[OptimizerSpec, torch.optim.Optimizer, list]] | None = None
        self._debug_summaries = debug_summaries
        self.last_grad_norms: dict[str, float] = {}
        self.modules_without_optimizer: list[str] = []  # known once optimizers() ran
        self.max_non_finite_updates_in_a_row = 10
        self.non_finite_updates_skipped = 0
        self._non_finite_in_a_row = 0
        self.scaler_updates_skipped = 0
        self._mixed_precision: MixedPrecision | None = None
        self._grad_scaler: torch.amp.GradScaler | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def train_state_spec(self):
        return self._train_state_spec

    @property
    def rollout_state_spec(self):
        return self._rollout_state_spec

    @property
    def predict_state_spec(self):
        return self._predict_state_spec

    def get_initial_train_state(self, batch_size: int):
        return zeros_from_spec(self._train_state_spec, batch_size)

    def get_initial_rollout_state(self, batch_size: int):
        return zeros_from_spec(self._rollout_state_spec, batch_size)

    def get_initial_predict_state(self, batch_size: int):
        return zeros_from_spec(self._predict_state_spec, batch_size)

    # -- optimizers ------------------------------------------------------------

    def add_optimizer(self, optimizer: OptimizerSpec, modules) -> None:
        """Optimize the parameters of ``modules`` (a module or list) with ``optimizer``."""
        if self._optimizers is not None:
            raise RuntimeError(f"{self._name}: add_optimizer after the optimizers were built")
        if isinstance(modules, nn.Module):
            modules = [modules]
        self._module_optimizers.append((optimizer, list(modules)))

    def _sub_algorithms_depth_first(self):
        """This algorithm's sub-algorithms, deepest first, then itself."""
        result = []
        for child in self.children():
            if isinstance(child, Algorithm):
                result.extend(child._sub_algorithms_depth_first())
            else:
                result.extend(
                    m for m in child.modules() if isinstance(m, Algorithm) and m is not child
                )
        result.append(self)
        return result

    def _assign_parameters(self):
        """``[(spec, params)]``: module-specific optimizers first, then defaults."""
        claimed: set[int] = set()
        assignments = []
        algorithms = self._sub_algorithms_depth_first()
        for alg in algorithms:
            for spec, modules in alg._module_optimizers:
                params = _unclaimed([p for m in modules for p in m.parameters()], claimed)
                assignments.append((spec, params))
        for alg in algorithms:
            if alg._default_optimizer is not None:
                params = _unclaimed(list(alg.parameters()), claimed)
                assignments.append((alg._default_optimizer, params))
        orphans = [
            n for n, p in self.named_parameters() if p.requires_grad and id(p) not in claimed
        ]
        if orphans:
            logging.warning("%s: parameters without an optimizer: %s", self._name, orphans)
        self.modules_without_optimizer = list(dict.fromkeys(n.split(".")[0] for n in orphans))
        return [(spec, params) for spec, params in assignments if params]

    def optimizers(self) -> list[tuple[OptimizerSpec, torch.optim.Optimizer, list]]:
        """``[(spec, torch optimizer, params)]``, built on first use."""
        if self._optimizers is None:
            self._optimizers = [
                (spec, spec.build(params), params) for spec, params in self._assign_parameters()
            ]
        return self._optimizers

    # -- mixed precision -----------------------------------------------------

    @property
    def mixed_precision(self) -> MixedPrecision | None:
        """The autocast setting of the training updates (None: float32 throughout)."""
        return self._mixed_precision

    def set_mixed_precision(self, mixed_precision: MixedPrecision | None) -> None:
        """Train with ``mixed_precision`` (``TrainerConfig.enable_amp``; None: float32):
        ``update_with_gradient`` steps through its grad scaler when it has one."""
        self._mixed_precision = mixed_precision
        self._grad_scaler = None if mixed_precision is None else mixed_precision.scaler

    # -- updates ---------------------------------------------------------------

    def update_with_gradient(
        self,
        loss_info: LossInfo,
        valid_masks: torch.Tensor | None = None,
        weight: float = 1.0,
        sample_weights: torch.Tensor | None = None,
    ) -> LossInfo:
        """One gradient step on ``loss_info``.

        Args:
            loss_info: ``loss`` ``[T, B]``/``[B]`` (or a scalar) plus an optional
                ``scalar_loss``.
            valid_masks: same shape as ``loss``; 0 where the loss must not count
                (LAST steps, whose action the env ignores, and padding). The loss
                is the masked mean.
            weight: multiplies the total loss.
            sample_weights: optional per-sample weights broadcastable to ``loss``
                (e.g. ``[T, B]`` importance weights of prioritized replay); the
                loss is then ``sum(mask * w * loss) / sum(mask)``.

        Returns:
            ``loss_info`` with ``loss`` reduced to a detached scalar. The global
            gradient norm of each optimizer (before clipping) is in
            ``self.last_grad_norms``: for optimizers that clip, and for all while
            summaries are recorded or a grad scaler is used (computing it costs three
            kernels per optimizer).

        With a grad scaler (``set_mixed_precision``, float16) the loss is scaled before
        ``backward`` and the gradients unscaled right after (and after the averaging of
        several ranks), so clipping and the norms see true units; the optimizers step
        through the scaler, whose scale then grows or backs off. A non-finite update is
        then the scaler's to skip (``_scaler_backs_off``: ``scaler_updates_skipped``,
        summarized as ``loss/scaler_updates_skipped``) and is counted below only when the
        scale cannot help.

        Raises:
            NonFiniteError: ``max_non_finite_updates_in_a_row`` updates in a row were
                skipped: when the loss or a computed gradient norm is NaN or inf, no
                optimizer steps (one host sync per update tells).
        """
        loss = masked_mean(loss_info.loss, valid_masks, sample_weights)
        if not isinstance(loss_info.scalar_loss, tuple):
            loss = loss + loss_info.scalar_loss
        loss = loss * weight
        optimizers = self.optimizers()
        for _, optimizer, _ in optimizers:
            optimizer.zero_grad(set_to_none=True)
        scaler = self._grad_scaler
        if scaler is None:
            loss.backward()
        else:
            scaler.scale(loss).backward()
        checked = loss.detach().double()
        if collectives.is_active():  # several learner ranks: the same gradient on each
            params = [p for _, _, group in optimizers for p in group]
            count = _valid_count(loss_info.loss, valid_masks)
            checked = torch.tensor(
                collectives.average_gradients(params, count, loss), dtype=torch.float64
            )
        if scaler is not None:  # true units from here on: clipping, norms, the step
            for _, optimizer, _ in optimizers:
                scaler.unscale_(optimizer)
        # (with a scaler the norms tell whether the scaled gradients overflowed)
        every_norm = scaler is not None or alf.summary.should_record_summaries()
        grad_norms = {}
        for i, (spec, optimizer, params) in enumerate(optimizers):
            spec.update_lr(optimizer)
            if spec.gradient_clipping is not None or every_norm:  # else the norm is unused
                name = spec.name if spec.name not in grad_norms else f"{spec.name}_{i}"
                grad_norms[name] = spec.clip_gradients(params)
                # (with several ranks only rank 0 summarizes: the decision below uses the
                # norms every rank computes)
                if spec.gradient_clipping is not None or not collectives.is_active():
                    checked = checked + grad_norms[name]
        self.last_grad_norms = grad_norms
        # One host sync: a float64 sum of the loss and the norms is finite exactly when all
        # of them are (float32 values cannot overflow it).
        if math.isfinite(float(checked)):
            self._non_finite_in_a_row = 0
            if scaler is None:
                for _, optimizer, _ in optimizers:
                    optimizer.step()
            else:
                for _, optimizer, _ in optimizers:
                    scaler.step(optimizer)
                scaler.update()
        elif scaler is None or self._scaler_backs_off(scaler):
            self._skip_non_finite_update(loss, grad_norms)
        return loss_info._replace(loss=loss.detach())

    def _scaler_backs_off(self, scaler: torch.amp.GradScaler) -> bool:
        """A non-finite update with a grad scaler: skipped, and the scale halved when the
        (unscaled) gradients were not finite, which in a float16 backward may be only
        because they were scaled. Returns whether the update is to be counted as
        non-finite too: when the scale did not back off (the gradients were finite: the
        loss itself was not) or was already below 1 (a smaller scale is no remedy). The
        scale and the gradients are the same on every learner rank: they decide alike."""
        scale = scaler.get_scale()
        for _, optimizer, _ in self.optimizers():
            optimizer.zero_grad(set_to_none=True)
        scaler.update()
        new_scale = scaler.get_scale()
        if new_scale >= scale or scale < 1.0:
            return True
        self.scaler_updates_skipped += 1
        alf.summary.scalar("loss/scaler_updates_skipped", self.scaler_updates_skipped)
        logging.info(
            "%s: update skipped by the grad scaler (scale %g, now %g)", self.name, scale, new_scale
        )
        return False

    def _skip_non_finite_update(self, loss: torch.Tensor, grad_norms: dict) -> None:
        """Count, log and summarize a skipped update; raise after too many in a row."""
        for _, optimizer, _ in self.optimizers():
            optimizer.zero_grad(set_to_none=True)
        self.non_finite_updates_skipped += 1
        self._non_finite_in_a_row += 1
        alf.summary.scalar("loss/non_finite_updates_skipped", self.non_finite_updates_skipped)
        norms = ", ".join(f"{k} {float(v):.4g}" for k, v in grad_norms.items())
        what = f"loss {float(loss.detach()):.4g}" + (f", gradient norms {norms}" if norms else "")
        logging.warning("%s: update skipped, not finite (%s)", self.name, what)
        if self._non_finite_in_a_row >= self.max_non_finite_updates_in_a_row:
            raise NonFiniteError(
                f"{self.name}: {self._non_finite_in_a_row} updates in a row had a non-finite "
                f"loss or gradient norm (last: {what}); the weights have diverged (lower "
                f"the learning rate?). TrainerConfig.max_non_finite_updates_in_a_row="
                f"{self.max_non_finite_updates_in_a_row}"
            )

    # -- checkpointing ---------------------------------------------------------

    def state_dict(self, *args, **kwargs):
        """Module state plus optimizer states under ``'_optimizers.<i>'`` and the grad
        scaler's state (mixed precision in float16) under ``'_grad_scaler'``."""
        state = super().state_dict(*args, **kwargs)
        prefix = kwargs.get("prefix", "")
        if not prefix and not args:
            for i, (_, optimizer, _) in enumerate(self.optimizers()):
                state[f"{_OPTIMIZER_KEY}.{i}"] = optimizer.state_dict()
            if self._grad_scaler is not None:
                state[GRAD_SCALER_KEY] = self._grad_scaler.state_dict()
        return state

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Load module and optimizer states written by ``state_dict``. A grad scaler's
        state is loaded when this algorithm has one (else it is ignored: a run resumed
        without float16 needs none); one has a fresh scaler when the state has none."""
        state_dict = dict(state_dict)
        scaler_state = state_dict.pop(GRAD_SCALER_KEY, None)
        opt_states = {
            k: state_dict.pop(k) for k in list(state_dict) if k.startswith(_OPTIMIZER_KEY + ".")
        }
        result = super().load_state_dict(state_dict, strict=strict, assign=assign)
        optimizers = self.optimizers()
        if opt_states and len(opt_states) != len(optimizers):
            raise ValueError(
                f"{self._name}: checkpoint has {len(opt_states)} optimizers, "
                f"the algorithm has {len(optimizers)}"
            )
        for i, (_, optimizer, _) in enumerate(optimizers):
            key = f"{_OPTIMIZER_KEY}.{i}"
            if key in opt_states:
                optimizer.load_state_dict(opt_states[key])
        if scaler_state is not None and self._grad_scaler is not None:
            self._grad_scaler.load_state_dict(scaler_state)
        return result


def _valid_count(loss, valid_masks) -> float:
    """The number of entries ``masked_mean`` averages ``loss`` over (1 for a scalar)."""
    if not isinstance(loss, torch.Tensor) or loss.ndim == 0:
        return 1.0
    if valid_masks is None:
        return float(loss.numel())
    return float(torch.broadcast_to(valid_masks, loss.shape).sum())


def _unclaimed(params, claimed: set) -> list:
    result = []
    for p in params:
        if p.requires_grad and id(p) not in claimed:
            claimed.add(id(p))
            result.append(p)
    return result
