"""Small math helpers on tensors: activations, masked reductions, norms, summary statistics."""

from __future__ import annotations

from collections.abc import Iterable

import torch

import alf


def identity(x):
    """Return ``x`` unchanged (the "no activation" activation)."""
    return x


@alf.configurable(blacklist=["x"])
def clipped_exp(x, clip_value_min=-20.0, clip_value_max=2.0):
    """``exp(clamp(x))``: a std transform that can neither vanish nor explode."""
    return torch.exp(torch.clamp(x, clip_value_min, clip_value_max))


def softsign(x: torch.Tensor) -> torch.Tensor:
    """``x / (1 + |x|)``: onto ``(-1, 1)`` like tanh, with polynomial instead of
    exponential tails, so its gradient vanishes more slowly (ALF's ``alf.math.softsign``;
    e.g. ``ActorNetwork.squashing_func``)."""
    return torch.nn.functional.softsign(x)


def add_ignore_empty(x, y):
    """``x + y``, where an empty nest ``()`` (or None) acts as zero.

    Useful to sum optional loss terms: ``add_ignore_empty((), loss) is loss``.
    """
    if x is None or (isinstance(x, tuple) and x == ()):
        return y
    if y is None or (isinstance(y, tuple) and y == ()):
        return x
    return x + y


def sum_to_leftmost(value: torch.Tensor, dim: int) -> torch.Tensor:
    """Sum out every dim of ``value`` beyond its first ``dim`` dims.

    E.g. ``sum_to_leftmost(x, 2)`` turns ``[T, B, A]`` into ``[T, B]``.
    """
    if value.ndim <= dim:
        return value
    return value.sum(dim=tuple(range(dim, value.ndim)))


def masked_sum(x: torch.Tensor, mask: torch.Tensor | None, dim=None) -> torch.Tensor:
    """Sum of ``x`` where ``mask`` is true (``mask`` broadcasts against ``x``)."""
    if mask is None:
        return x.sum() if dim is None else x.sum(dim)
    x = x * mask.to(x.dtype)
    return x.sum() if dim is None else x.sum(dim)


def masked_mean(x, mask=None, weights=None, dim=None) -> torch.Tensor:
    """Mean of ``x`` over the entries where ``mask`` is true; 0 if none is.

    It is ``sum(mask * weights * x) / sum(mask)``, both sums over the broadcast shape of
    ``x`` and ``mask``: ``weights`` scale the entries without changing the count. It is
    the training loss of ``Algorithm.update_with_gradient`` and the masked mean of the
    loss summaries.

    Args:
        x: a tensor (or a number) of any shape; a scalar is returned as is (it has
            nothing to mask).
        mask: bool or 0/1 tensor broadcastable with ``x``, or None for a plain mean.
        weights: optional per-entry weights broadcastable to ``x`` (e.g. the importance
            weights of prioritized replay); they need a non-scalar ``x``.
        dim: dim(s) to reduce; all when None.

    Returns:
        The masked mean, reduced over ``dim``.
    """
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x, dtype=torch.float32)
    if weights is not None:
        if x.ndim == 0:
            raise ValueError("sample weights need a per-sample loss, got a scalar loss")
        x = x * weights.to(x.dtype)
    if mask is None or x.ndim == 0:
        return x.mean() if dim is None else x.mean(dim)
    mask = mask.to(x.dtype)
    masked = x * mask
    count = mask.expand_as(masked)
    if dim is None:
        return masked.sum() / count.sum().clamp(min=1.0)
    return masked.sum(dim) / count.sum(dim).clamp(min=1.0)


def explained_variance(
    ypred: torch.Tensor, y: torch.Tensor, valid_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """``1 - Var[y - ypred] / Var[y]``: how much of the variance of ``y`` ``ypred`` explains.

    1 is a perfect prediction, 0 is no better than predicting the mean of ``y``,
    negative is worse. Returns 0 when ``Var[y] == 0`` (nothing to explain).

    Args:
        ypred: predictions, any shape.
        y: targets, same shape.
        valid_mask: optional bool / 0-1 tensor of the same shape; only valid
            entries count.

    Returns:
        A scalar tensor (no gradient).
    """
    with torch.no_grad():
        var_y = _masked_variance(y, valid_mask)
        var_err = _masked_variance(y - ypred, valid_mask)
        ratio = 1.0 - var_err / torch.where(var_y == 0, torch.ones_like(var_y), var_y)
        return torch.where(var_y == 0, torch.zeros_like(var_y), ratio)


def _masked_variance(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    mean = masked_mean(x, mask)
    return masked_mean((x - mean) ** 2, mask)


def global_norm(tensors: Iterable[torch.Tensor]) -> torch.Tensor:
    """The L2 norm of all ``tensors`` taken together (``None`` entries are skipped)."""
    tensors = [t for t in tensors if t is not None]
    if not tensors:
        return torch.zeros(())
    norms = torch._foreach_norm(tensors)
    return torch.linalg.vector_norm(torch.stack(norms))


def clip_by_global_norm(
    tensors: Iterable[torch.Tensor],
    clip_norm: float,
    use_norm: torch.Tensor | None = None,
    in_place: bool = False,
):
    """Scale ``tensors`` so that their global L2 norm is at most ``clip_norm``.

    Each tensor is multiplied by ``clip_norm / max(global_norm, clip_norm)``
    (Pascanu et al. 2013, "On the difficulty of training recurrent neural networks").

    Args:
        tensors: tensors (e.g. gradients); ``None`` entries are kept as None.
        clip_norm: the maximum global norm (> 0).
        use_norm: a precomputed global norm, computed when None.
        in_place: scale the tensors in place (e.g. ``[p.grad for p in params]``)
            instead of returning new ones.

    Returns:
        ``(clipped_tensors, global_norm)`` where ``global_norm`` is the norm
        before clipping (a scalar tensor, for summaries).
    """
    tensors = list(tensors)
    present = [t for t in tensors if t is not None]
    norm = global_norm(present) if use_norm is None else use_norm
    scale = (clip_norm / torch.clamp(norm, min=clip_norm)).to(present[0].dtype) if present else 1
    if in_place:
        if present:
            torch._foreach_mul_(present, scale)
        return tensors, norm
    return [None if t is None else t * scale for t in tensors], norm
