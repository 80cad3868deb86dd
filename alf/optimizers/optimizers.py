"""Configurable optimizer specs.

A conf file writes ``optimizer=alf.optimizers.Adam(lr=1e-3, gradient_clipping=0.5)``
before any parameter exists; the algorithm later calls ``spec.build(params)`` to
make the torch optimizer. The spec also carries gradient clipping, an optional
learning-rate schedule (a float or a scheduler from ``alf.utils.schedulers``) and ALF's
``capacity_ratio`` (``CapacityMasks``: only a fixed random part of each parameter is
trained).
"""

from __future__ import annotations

import torch
from torch.optim import optimizer as _torch_optimizer

import alf
from alf.configuration.argtypes import (
    LearningRate,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    Probability,
)
from alf.optimizers.capacity import (
    CAPACITY_DEFAULTS,
    CapacityMasks,
    CapacityRatio,
    capacity_args,
    check_capacity_args,
)
from alf.utils.schedulers import ConstantScheduler, as_scheduler


class OptimizerSpec:
    """Describes a torch optimizer plus gradient clipping.

    Args:
        optimizer_cls: the torch optimizer class.
        lr: learning rate, a scheduler (callable returning the current lr), or
            ``[(progress, lr), ...]`` for a piecewise-linear schedule over training.
        gradient_clipping: clip gradients to this global norm (None: no clipping).
        clip_by_global_norm: clip the global norm over all parameters of the
            optimizer (True) or each parameter's norm separately (False).
        name: shown in summaries.
        capacity_ratio: ALF's: the share of each parameter's elements that is trained
            (a number in [0, 1] or a schedule of it, e.g. growing over training); the
            others stay frozen (``CapacityMasks``). 1: all are trained.
        min_capacity: ALF's: at least so many elements of each parameter are trained
            (a parameter with at most this many elements is trained whole).
        masked_out_value: ALF's: None (frozen elements keep their value) or the value
            the frozen elements are set to, when the optimizer is built and after
            every step.
        **kwargs: passed to ``optimizer_cls``.
    """

    def __init__(
        self,
        optimizer_cls,
        lr=1e-3,
        gradient_clipping: float | None = None,
        clip_by_global_norm: bool = True,
        name: str | None = None,
        capacity_ratio=1.0,
        min_capacity: int = 8192,
        masked_out_value: float | None = None,
        **kwargs,
    ):
        self.optimizer_cls = optimizer_cls
        self.lr_scheduler = as_scheduler(lr)
        self.gradient_clipping = gradient_clipping
        self.clip_by_global_norm = clip_by_global_norm
        self.name = name or optimizer_cls.__name__
        check_capacity_args(capacity_ratio, min_capacity, self.name)
        self.capacity_ratio = as_scheduler(capacity_ratio)
        self.min_capacity = int(min_capacity)
        self.masked_out_value = masked_out_value
        self.kwargs = kwargs

    @property
    def limits_capacity(self) -> bool:
        """Whether ``capacity_ratio`` may freeze elements (it is below 1 or scheduled)."""
        ratio = self.capacity_ratio
        return not isinstance(ratio, ConstantScheduler) or float(ratio()) < 1.0

    def build(self, params) -> torch.optim.Optimizer:
        """Make the torch optimizer over ``params`` (a list of tensors or param groups),
        with ``CapacityMasks`` attached when ``capacity_ratio`` may be below 1."""
        optimizer = self._build(params)
        if self.limits_capacity:
            CapacityMasks(
                optimizer,
                self.capacity_ratio,
                self.min_capacity,
                self.masked_out_value,
                self.name,
            )
        return optimizer

    def _build(self, params) -> torch.optim.Optimizer:
        params = list(params)
        if not params:
            raise ValueError(f"Optimizer {self.name} has no parameters to optimize")
        kwargs = dict(self.kwargs)
        if kwargs.pop("fused", False):
            try:  # fused kernels: ~2.5x faster steps than foreach on CPU (torch >= 2.4)
                return self.optimizer_cls(params, lr=self.lr_scheduler(), fused=True, **kwargs)
            except (RuntimeError, TypeError, ValueError):
                kwargs["foreach"] = True
        return self.optimizer_cls(params, lr=self.lr_scheduler(), **kwargs)

    def update_lr(self, optimizer: torch.optim.Optimizer) -> float:
        """Set the optimizer's lr from the schedule; return it."""
        lr = float(self.lr_scheduler())
        for group in optimizer.param_groups:
            group["lr"] = lr
        return lr

    def clip_gradients(self, params) -> torch.Tensor:
        """Clip gradients as configured; return the global gradient norm before clipping."""
        params = [p for p in params if p.grad is not None]
        if not params:
            return torch.zeros(())
        if self.clip_by_global_norm or self.gradient_clipping is None:
            return clip_grad_norm(params, self.gradient_clipping)
        norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params]))
        for p in params:
            clip_grad_norm([p], self.gradient_clipping)
        return norm

    def __repr__(self) -> str:
        args = [f"lr={self.lr_scheduler!r}"]
        if self.gradient_clipping is not None:
            args.append(f"gradient_clipping={self.gradient_clipping}")
        if self.limits_capacity:
            args.append(f"capacity_ratio={self.capacity_ratio!r}")
            args.append(f"min_capacity={self.min_capacity}")
            args.append(f"masked_out_value={self.masked_out_value!r}")
        args += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(args)})"


def clip_grad_norm(params: list[torch.Tensor], max_norm: float | None) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)``, leaner.

    The same kernels and formula (every gradient times
    ``min(max_norm / (norm + 1e-6), 1)``, ``norm`` the L2 norm of all gradients
    together) without torch's per-call grouping by device and dtype, which costs
    as much as the arithmetic for a small network (~30 µs of ~65 µs per update of
    PPO on CartPole). Gradients on several devices go to torch (mixed dtypes need
    no grouping: the per-tensor norms are stacked with type promotion, as torch does).

    Args:
        params: parameters whose ``grad`` is not None.
        max_norm: the largest global norm; None only computes the norm.

    Returns:
        The global gradient norm before clipping (a scalar tensor).
    """
    grads = [p.grad for p in params]
    if not all(g.is_cpu for g in grads) and len({g.device for g in grads}) > 1:
        return torch.nn.utils.clip_grad_norm_(params, max_norm or float("inf"), foreach=True)
    with torch.no_grad():
        norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
        if max_norm is not None:
            torch._foreach_mul_(grads, torch.clamp(max_norm / (norm + 1e-6), max=1.0))
    return norm


class _LeanFusedAdamStep:
    """``step`` and ``zero_grad`` of torch's fused Adam/AdamW with less Python per call.

    ``torch.optim.Adam(fused=True).step`` spends ~40 µs in Python (per-call
    grouping of tensors by device and dtype, option checks, dynamo guards) around a
    ~25 µs kernel for a small network: a third of the optimizer's time in PPO on
    CartPole. This step calls the same kernels (``_foreach_add_`` on the step
    counts, then ``_fused_adam_`` / ``_fused_adamw_``) with the same arguments, so
    results are bit-identical, and the state (``step``, ``exp_avg``,
    ``exp_avg_sq``) is torch's own: ``state_dict`` and ``load_state_dict`` are
    unchanged. Anything outside the common case goes to torch's ``step``: a
    closure, a grad scaler, amsgrad, capturable or differentiable mode, tensor
    hyperparameters, parameters on several devices or dtypes, sparse or complex
    gradients. The first step initializes the state with torch's own ``_init_group``.

    Step hooks and profiling: torch wraps the ``step`` of every optimizer class in
    ``Optimizer.profile_hook_step`` (a ``record_function`` range plus the step
    hooks), unless the method is marked ``hooked``. That wrapper alone cost ~1 ms
    of a 34 ms PPO CartPole iteration (20 steps), so this ``step`` is marked and
    applies torch's own wrapper only when a step hook is registered or a profiler
    runs: the hooks run exactly as with torch (tested).
    """

    def step(self, closure=None):
        if _step_hooks_or_profiler(self):
            return _hooked_lean_step(self, closure)
        return self._lean_step(closure)

    step.hooked = True  # see the class doc: torch must not wrap this step

    def _lean_step(self, closure=None):
        groups = None if closure is not None else self._lean_groups()
        if groups is None:
            return self._torch_step(closure)
        for group, (params, grads, exp_avgs, exp_avg_sqs, steps) in groups:
            beta1, beta2 = group["betas"]
            kernel = torch._fused_adamw_ if group["decoupled_weight_decay"] else torch._fused_adam_
            with torch.no_grad():
                torch._foreach_add_(steps, 1)
                kernel(
                    params,
                    grads,
                    exp_avgs,
                    exp_avg_sqs,
                    [],
                    steps,
                    amsgrad=False,
                    lr=group["lr"],
                    beta1=beta1,
                    beta2=beta2,
                    weight_decay=group["weight_decay"],
                    eps=group["eps"],
                    maximize=group["maximize"],
                )
        return None

    def _torch_step(self, closure):
        """torch's own step, without running the step hooks a second time.

        torch wraps the ``step`` of every optimizer class it instantiates (here
        ``Adam.step`` once a plain ``Adam`` exists) in its hook-running wrapper, marked
        ``hooked``; ``step`` above already ran the hooks, if any.
        """
        step = super().step
        if getattr(step, "hooked", False):
            return step.__wrapped__(self, closure)
        return step(closure)

    def _lean_groups(self):
        """``[(group, tensor lists)]`` for the lean step, or None to use torch's."""
        if getattr(self, "grad_scale", None) is not None:
            return None
        groups = []
        for group in self.param_groups:
            if not _lean_group_options(group):
                return None
            lists = self._group_lists(group)
            if lists is None:
                return None
            if lists[0]:
                groups.append((group, lists))
        return groups

    def _group_lists(self, group):
        """``(params, grads, exp_avgs, exp_avg_sqs, steps)`` of the params with a gradient."""
        with_grad = [p for p in group["params"] if p.grad is not None]
        if any(p.grad.is_sparse or p.is_complex() for p in with_grad):
            return None
        if any(not self.state.get(p) for p in with_grad):  # torch's lazy initialization
            self._init_group(group, [], [], [], [], [], [])
        params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
        device = dtype = None
        for p in with_grad:
            grad = p.grad
            state = self.state.get(p)
            if not state:
                return None
            if device is None:
                device, dtype = p.device, p.dtype
            elif p.device != device or p.dtype != dtype:
                return None
            params.append(p)
            grads.append(grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            steps.append(state["step"])
        return params, grads, exp_avgs, exp_avg_sqs, steps

    def zero_grad(self, set_to_none: bool = True) -> None:
        if not set_to_none:
            return _undecorated(torch.optim.Optimizer.zero_grad)(self, set_to_none)
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None


def _undecorated(method):
    """``method`` without torch's ``torch._disable_dynamo`` wrapper, if it has one."""
    return getattr(method, "__wrapped__", method)


class _NoDynamoImport:
    """torch's ``Optimizer`` methods without their ``torch._disable_dynamo`` wrappers.

    Each wrapper imports ``torch._dynamo`` on its first call (as torch's ``Adam.step``
    does on every call), about a second of CPU and 70 MB of memory, so that
    ``torch.compile`` does not trace these methods; alf never compiles them. With this
    mixin and the lean step (which initializes its state with torch's ``_init_group``),
    training with these optimizers imports no ``torch._dynamo``: a 2,048-step PPO
    CartPole run takes 1.9 s instead of 2.9 s. The methods run are torch's.
    """

    def add_param_group(self, param_group) -> None:
        _undecorated(torch.optim.Optimizer.add_param_group)(self, param_group)

    def state_dict(self):
        return _undecorated(torch.optim.Optimizer.state_dict)(self)

    def load_state_dict(self, state_dict) -> None:
        _undecorated(torch.optim.Optimizer.load_state_dict)(self, state_dict)


def _step_hooks_or_profiler(optimizer) -> bool:
    """Whether a step of ``optimizer`` needs torch's hook-and-profiler wrapper."""
    return bool(
        optimizer._optimizer_step_pre_hooks
        or optimizer._optimizer_step_post_hooks
        or _torch_optimizer._global_optimizer_pre_hooks
        or _torch_optimizer._global_optimizer_post_hooks
        or torch.autograd.profiler._is_profiler_enabled
    )


#: torch's wrapper (step hooks, ``record_function``) around the lean step.
_hooked_lean_step = torch.optim.Optimizer.profile_hook_step(_LeanFusedAdamStep._lean_step)


def _lean_group_options(group) -> bool:
    """Whether a param group's options are those the lean fused step handles."""
    if "decoupled_weight_decay" not in group or not hasattr(torch, "_fused_adam_"):
        return False  # an older torch (< 2.6): its own step is used, nothing private
    return (
        group.get("fused", False)
        and not group.get("amsgrad", False)
        and not group.get("capturable", False)
        and not group.get("differentiable", False)
        and all(isinstance(group[k], float) for k in ("lr", "weight_decay", "eps"))
        and all(isinstance(b, float) for b in group["betas"])
    )


class FusedAdam(_LeanFusedAdamStep, _NoDynamoImport, torch.optim.Adam):
    """``torch.optim.Adam`` with the lean fused step of ``_LeanFusedAdamStep``."""


class FusedAdamW(_LeanFusedAdamStep, _NoDynamoImport, torch.optim.AdamW):
    """``torch.optim.AdamW`` with the lean fused step of ``_LeanFusedAdamStep``."""


@alf.configurable
def Adam(  # noqa: N802 (ALF's public name)
    lr: LearningRate = 1e-3,
    betas: tuple[Probability, Probability] = (0.9, 0.999),
    eps: NonNegativeFloat = 1e-8,
    weight_decay: NonNegativeFloat = 0.0,
    amsgrad: bool = False,
    gradient_clipping: PositiveFloat | None = None,
    clip_by_global_norm: bool = True,
    name: str | None = None,
    capacity_ratio: CapacityRatio = 1.0,
    min_capacity: NonNegativeInt = 8192,
    masked_out_value: float | None = None,
) -> OptimizerSpec:
    """Adam (Kingma & Ba, 2015); see ``OptimizerSpec`` for the clipping and capacity args."""
    call = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)
    call.update(gradient_clipping=gradient_clipping, clip_by_global_norm=clip_by_global_norm)
    call.update(capacity_args(capacity_ratio, min_capacity, masked_out_value))
    return _factory_spec(Adam, FusedAdam, call, name, betas=tuple(betas), fused=True)


@alf.configurable
def AdamW(  # noqa: N802
    lr: LearningRate = 1e-3,
    betas: tuple[Probability, Probability] = (0.9, 0.999),
    eps: NonNegativeFloat = 1e-8,
    weight_decay: NonNegativeFloat = 1e-2,
    gradient_clipping: PositiveFloat | None = None,
    clip_by_global_norm: bool = True,
    name: str | None = None,
    capacity_ratio: CapacityRatio = 1.0,
    min_capacity: NonNegativeInt = 8192,
    masked_out_value: float | None = None,
) -> OptimizerSpec:
    """AdamW (Loshchilov & Hutter, 2019)."""
    call = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    call.update(gradient_clipping=gradient_clipping, clip_by_global_norm=clip_by_global_norm)
    call.update(capacity_args(capacity_ratio, min_capacity, masked_out_value))
    return _factory_spec(AdamW, FusedAdamW, call, name, betas=tuple(betas), fused=True)


@alf.configurable
def SGD(  # noqa: N802
    lr: LearningRate = 1e-2,
    momentum: NonNegativeFloat = 0.0,
    gradient_clipping: PositiveFloat | None = None,
    clip_by_global_norm: bool = True,
    name: str | None = None,
    capacity_ratio: CapacityRatio = 1.0,
    min_capacity: NonNegativeInt = 8192,
    masked_out_value: float | None = None,
) -> OptimizerSpec:
    """Stochastic gradient descent with optional momentum."""
    call = dict(lr=lr, momentum=momentum, gradient_clipping=gradient_clipping)
    call.update(clip_by_global_norm=clip_by_global_norm)
    call.update(capacity_args(capacity_ratio, min_capacity, masked_out_value))
    return _factory_spec(SGD, torch.optim.SGD, call, name)


_SPEC_ARGS = ("lr", "gradient_clipping", "clip_by_global_norm")


def _factory_spec(factory, optimizer_cls, call: dict, name, **options) -> OptimizerSpec:
    """The ``OptimizerSpec`` that the call ``factory(**call, name=name)`` makes.

    ``lr``, the clipping and the capacity arguments of ``call`` go to ``OptimizerSpec``, its other
    arguments to ``optimizer_cls``, with ``options`` added or replacing some; the spec is
    named ``name``, else after the factory. The call is remembered so the operative
    config written to ``root_dir/alf_config.py`` renders the spec as that call
    (``alf.configuration.writer``).
    """
    optimizer_args = {
        k: v for k, v in call.items() if k not in _SPEC_ARGS and k not in CAPACITY_DEFAULTS
    }
    optimizer_args.update(options)
    spec_args = {k: call[k] for k in _SPEC_ARGS}
    spec_args.update({k: call[k] for k in CAPACITY_DEFAULTS if k in call})
    spec = OptimizerSpec(
        optimizer_cls, **spec_args, name=name or factory.__name__, **optimizer_args
    )
    if name is not None:
        call["name"] = name
    spec._alf_repr_call = (factory, (), call)
    return spec
