"""Finite or stop: find NaN and inf in environment data and in training state.

One NaN reward or inf observation, trained on, spreads into every weight within an
update or two; a checkpoint of such weights would then replace the good ones. alf checks:

* every time step an ``Unroller`` receives from its environment (``check_time_step``:
  ``observation`` and ``reward``, one vectorized test per tensor of the batch; the names
  of the culprits are only worked out once something is found);
* every checkpoint before it is written (``alf.utils.checkpoint_utils``): a state holding
  a non-finite float is refused, so it is never written, never the best one, and never
  makes the checkpointer prune a good one.

Both raise ``NonFiniteError``, whose message names the culprit (field, env_id and env
step; or the state entry); ``alf.bin.train`` prints it as one line and exits non-zero.
"""

from __future__ import annotations

import math

import numpy as np
import torch

import alf.nest as nest


class NonFiniteError(RuntimeError):
    """A NaN or inf where only finite numbers may be (the message names where)."""


def _all_finite(tensor) -> bool:
    if not torch.is_tensor(tensor) or not tensor.is_floating_point():
        return True
    if tensor.device.type == "cpu":
        return bool(np.isfinite(tensor.numpy(force=True)).all())
    return bool(torch.isfinite(tensor).all())


def _describe(tensor: torch.Tensor) -> str:
    values = tensor[~torch.isfinite(tensor)]
    kinds = sorted({"nan" if torch.isnan(v) else ("inf" if v > 0 else "-inf") for v in values})
    return "/".join(kinds)


def first_non_finite(state, prefix: str = "") -> str | None:
    """The path of the first floating tensor in the nest ``state`` holding a NaN or inf
    (``prefix`` + path, dotted), None when all are finite."""
    for path, leaf in nest.flatten_with_path(state):
        if not _all_finite(leaf):
            where = ".".join(p for p in (prefix, path) if p)
            return f"{where} ({_describe(leaf.detach().cpu())})"
    return None


def check_time_step(time_step, env_steps: int) -> None:
    """Raise ``NonFiniteError`` if ``time_step``'s observation or reward holds a NaN or inf.

    Args:
        time_step: a batched ``TimeStep`` from an environment.
        env_steps: env steps taken so far by the caller (for the message).
    """
    observation, reward = fields = (time_step.observation, time_step.reward)
    # The common case in as few calls as possible: a sum is finite exactly when all its
    # terms are (or it overflowed: then the general check below looks closer).
    cpu_tensor = type(observation) is torch.Tensor and observation.device.type == "cpu"
    if cpu_tensor and math.isfinite(observation.numpy().sum() + reward.numpy().sum()):
        return
    if all(_all_finite(t) for t in nest.flatten(fields)):
        return
    for name, field in zip(("observation", "reward"), fields):
        for path, leaf in nest.flatten_with_path(field):
            if _all_finite(leaf):
                continue
            rows = (~torch.isfinite(leaf.detach().cpu())).reshape(leaf.shape[0], -1).any(-1)
            row = int(rows.nonzero()[0, 0])
            env_id = int(time_step.env_id[row]) if torch.is_tensor(time_step.env_id) else row
            field_name = f"{name}.{path}" if path else name
            raise NonFiniteError(
                f"the environment returned a non-finite {field_name} "
                f"({_describe(leaf[row].detach().cpu())}) from env_id {env_id} after "
                f"{env_steps} env steps; training stops before learning from it"
            )
