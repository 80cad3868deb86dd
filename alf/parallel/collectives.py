"""Data-parallel learners: the process group and the few collectives training needs.

``python -m alf.bin.train --num_processes K`` (or ``torchrun --nproc_per_node K -m
alf.bin.train``) runs K learner processes ("ranks") of one experiment. Each rank steps
its own environments and trains a copy of the same algorithm; the copies stay equal
because every update uses the same gradients and every normalizer the same statistics:

* ``average_gradients``: after ``backward`` the gradients of all ranks are averaged in one
  ``all_reduce`` (what ``DistributedDataParallel`` does), weighted by each rank's number
  of valid loss entries so that the average is the gradient of the masked mean over the
  global batch (with equal counts it is the plain average);
* ``pooled_moments``: a normalizer's batch count, mean and variance are pooled over the
  ranks before they are merged into its running statistics, so the statistics equal those
  of the concatenated data;
* ``broadcast_state``: at start (and after a resume) rank 0's parameters and buffers are
  copied to every rank;
* ``sum_across_ranks`` / ``mean_across_ranks``: env-step counts, stop requests, metrics;
* ``broadcast_object``: rank 0's value on every rank (a PBT member's decision and the
  state it copied, ``alf.pbt.member``).

Outside a process group (one process, the default) every function here is the identity,
so single-process training runs exactly as before.

The process group is made by ``init_process_group_from_env`` from torchrun's
environment variables (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``):
gloo on the CPU, nccl when each rank has a GPU. Every collective has a timeout
(``ALF_DIST_TIMEOUT`` seconds, default 600): a rank that hangs makes the others fail
with an error after it instead of waiting forever, and a rank that dies closes its
connections, which the others see at once.
"""

from __future__ import annotations

import contextlib
import datetime
import gc
import logging
import math
import os
import re

import torch
import torch.distributed as dist

_DEFAULT_TIMEOUT = 600.0


class PeerFailure(RuntimeError):
    """A collective failed: another rank died, or hung past the timeout."""


@contextlib.contextmanager
def _collective():
    """Turn the failure of a collective into a one-line ``PeerFailure``."""
    try:
        yield
    except (RuntimeError, dist.DistError) as e:
        if isinstance(e, PeerFailure):
            raise
        lines = str(e).strip().splitlines() or [type(e).__name__]
        reason = re.sub(r"^\[[^\]]*\]\s*", "", lines[0])  # drop gloo's source location
        reason = reason.split(". This is typically caused")[0]  # and its advice
        who = os.environ.get("RANK", rank())
        raise PeerFailure(
            f"learner rank {who}: a collective with the other ranks failed (another rank "
            f"died, or hung for longer than ALF_DIST_TIMEOUT={timeout_seconds():g} s): {reason}"
        ) from e


def is_active() -> bool:
    """Whether this process is one of several learner ranks."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    """This process's rank (0 without a process group)."""
    return dist.get_rank() if is_active() else 0


def world_size() -> int:
    """The number of learner ranks (1 without a process group)."""
    return dist.get_world_size() if is_active() else 1


def is_main() -> bool:
    """Rank 0 (or the only process): the one that writes files."""
    return rank() == 0


def launched_by_torchrun() -> bool:
    """Whether torchrun (or ``--num_processes``) started this process as one of several."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def timeout_seconds() -> float:
    """The collectives' timeout, from ``ALF_DIST_TIMEOUT`` (seconds)."""
    value = os.environ.get("ALF_DIST_TIMEOUT", "")
    try:
        seconds = float(value) if value else _DEFAULT_TIMEOUT
    except ValueError:
        raise ValueError(f"ALF_DIST_TIMEOUT must be a number of seconds, got {value!r}") from None
    if seconds <= 0:
        raise ValueError(f"ALF_DIST_TIMEOUT must be > 0, got {value!r}")
    return seconds


def init_process_group_from_env(device: torch.device) -> None:
    """Join the process group torchrun describes (no-op for a single process).

    Args:
        device: the training device: gloo on the CPU; nccl when it is a GPU, each local
            rank taking the GPU ``LOCAL_RANK``.
    """
    if not launched_by_torchrun() or dist.is_initialized():
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")  # loopback unless the user says
    backend = "nccl" if device.type == "cuda" else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    timeout = datetime.timedelta(seconds=timeout_seconds())
    with _collective():
        _join(backend, timeout)
    logging.info(
        "Learner rank %d of %d (pid %d, %s, master %s:%s)",
        dist.get_rank(),
        dist.get_world_size(),
        os.getpid(),
        backend,
        os.environ.get("MASTER_ADDR"),
        os.environ.get("MASTER_PORT"),
    )


def init_process_group(backend: str, **kwargs) -> None:
    """``torch.distributed.init_process_group``, with ``torch._dynamo`` imported first.

    Importing ``torch._dynamo`` (as ``torch.compile`` and torch's own optimizers do on first
    use) while a group exists leaves references to the group in that module, so
    ``destroy_process_group`` can no longer free it: gloo's worker threads then outlive
    the interpreter, and a rank can abort at exit ("terminate called without an active
    exception").
    """
    import torch._dynamo  # noqa: F401

    dist.init_process_group(backend, **kwargs)


def _join(backend: str, timeout: datetime.timedelta) -> None:
    if "ALF_STORE_LISTEN_FD" not in os.environ:
        init_process_group(backend, timeout=timeout)
    else:  # alf.bin.launch_ranks: rank 0 serves the store on the socket it was given
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        listen_fd = int(os.environ.pop("ALF_STORE_LISTEN_FD"))
        store = dist.TCPStore(
            os.environ["MASTER_ADDR"],
            int(os.environ["MASTER_PORT"]),
            world,
            is_master=rank == 0,
            timeout=timeout,
            master_listen_fd=listen_fd if rank == 0 else None,
        )
        init_process_group(backend, store=store, rank=rank, world_size=world, timeout=timeout)


def destroy_process_group() -> None:
    """Leave the process group; its backend's threads are joined (see ``init_process_group``)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
        gc.collect()


def _device_for_collectives() -> torch.device:
    return torch.device("cuda") if dist.get_backend() == "nccl" else torch.device("cpu")


def barrier() -> None:
    if is_active():
        with _collective():
            dist.barrier()


def sum_across_ranks(values: list[float]) -> list[float]:
    """Elementwise sums of ``values`` over the ranks (float64)."""
    if not is_active():
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=_device_for_collectives())
    with _collective():
        dist.all_reduce(t)
    return t.cpu().tolist()


def mean_across_ranks(values: list[float]) -> list[float]:
    """Elementwise means of ``values`` over the ranks."""
    n = world_size()
    return [v / n for v in sum_across_ranks(values)]


def average_gradients(params: list[torch.nn.Parameter], count: float, loss: torch.Tensor) -> float:
    """Replace each parameter's gradient by the count-weighted average over the ranks.

    Every rank's loss is a mean over its ``count`` valid entries; the gradient of the
    mean over all ranks' entries is ``sum_r count_r * grad_r / sum_r count_r``. The
    gradients (a missing one counts as zero), the losses and the counts travel in one
    flat ``all_reduce``.

    Args:
        params: the parameters, in the same order on every rank.
        count: this rank's number of valid loss entries (0 when it has none).
        loss: this rank's (scalar) loss.

    Returns:
        the loss averaged the same way, or NaN when an averaged gradient is not finite:
        the same number on every rank (as are the gradients), so every rank takes the
        same decision on a non-finite update.
    """
    device = params[0].device if params else loss.device
    flat = [
        (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).to(torch.float32)
        for p in params
    ]
    tail = torch.stack([loss.detach().to(device, torch.float32), torch.ones((), device=device)])
    buffer = torch.cat([*flat, tail]) * float(count)
    with _collective():
        dist.all_reduce(buffer)
    total = float(buffer[-1])
    if total <= 0:
        return float(loss)
    buffer = buffer / total
    offset = 0
    for p in params:
        n = p.numel()
        piece = buffer[offset : offset + n].view_as(p).to(p.dtype)
        if p.grad is None:
            p.grad = piece.clone()
        else:
            p.grad.copy_(piece)
        offset += n
    finite = bool(torch.isfinite(buffer).all())
    return float(buffer[-2]) if finite else math.nan


def pooled_moments(
    count: int, mean: torch.Tensor, var: torch.Tensor
) -> tuple[int, torch.Tensor, torch.Tensor]:
    """The sample count, mean and (biased) variance of the union of every rank's batch.

    The ranks' ``(count, mean, var)`` are gathered and merged in rank order with Chan et
    al.'s pairwise formula (as ``RunningMeanVar`` merges batches), so every rank gets the
    same float64 result, equal to the moments of the concatenated samples up to rounding.

    Args:
        count: this rank's number of samples.
        mean, var: their mean and biased variance (float64, any shape; ignored when
            ``count`` is 0).

    Returns:
        ``(total count, pooled mean, pooled variance)``; the inputs when not distributed.
    """
    if not is_active():
        return count, mean, var
    device = _device_for_collectives()
    packed = torch.cat(
        [torch.tensor([float(count)]), mean.reshape(-1).cpu(), var.reshape(-1).cpu()]
    )
    packed = packed.to(device, torch.float64)
    gathered = [torch.empty_like(packed) for _ in range(world_size())]
    with _collective():
        dist.all_gather(gathered, packed)
    size = mean.numel()
    total, pooled_mean, pooled_var = 0.0, None, None
    for part in gathered:
        part = part.cpu()
        n = float(part[0])
        if n == 0:
            continue
        part_mean, part_var = part[1 : 1 + size], part[1 + size :]
        if total == 0:
            pooled_mean, pooled_var = part_mean.clone(), part_var.clone()
        else:
            weight = n / (total + n)
            delta = part_mean - pooled_mean
            pooled_var = (
                (1 - weight) * pooled_var + weight * part_var + weight * (1 - weight) * delta**2
            )
            pooled_mean = pooled_mean + weight * delta
        total += n
    if total == 0:
        return 0, mean, var
    shape_like = mean.reshape(-1)
    return (
        int(round(total)),
        pooled_mean.to(shape_like.device).view_as(mean),
        pooled_var.to(shape_like.device).view_as(var),
    )


def broadcast_state(module: torch.nn.Module) -> None:
    """Copy rank 0's parameters and buffers into ``module`` on every rank."""
    if not is_active():
        return
    device = _device_for_collectives()
    with torch.no_grad(), _collective():
        for tensor in [*module.parameters(), *module.buffers()]:
            if device.type == "cpu" and tensor.device.type == "cpu":
                dist.broadcast(tensor.data, src=0)
            else:
                moved = tensor.data.to(device)
                dist.broadcast(moved, src=0)
                tensor.data.copy_(moved)


def all_gather_objects(obj) -> list:
    """``[obj of rank 0, obj of rank 1, ...]`` (``[obj]`` when not distributed)."""
    if not is_active():
        return [obj]
    gathered = [None] * world_size()
    with _collective():
        dist.all_gather_object(gathered, obj)
    return gathered


def broadcast_object(obj):
    """Rank 0's ``obj`` (any picklable value, e.g. a state dict of CPU tensors) on every
    rank; ``obj`` itself when not distributed. Every rank calls it (the others' ``obj``
    is ignored)."""
    if not is_active():
        return obj
    holder = [obj if is_main() else None]
    device = _device_for_collectives()
    with _collective():
        dist.broadcast_object_list(holder, src=0, device=device)
    return holder[0]
