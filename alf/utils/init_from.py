"""Start a new run from the weights of an earlier one (``TrainerConfig.init_from``).

``init_from`` names a checkpoint of another run: its ``root_dir`` (the newest
readable checkpoint under ``root_dir/train/algorithm``, falling back to an older
one as resuming does), that checkpoint directory itself, or a checkpoint file
(``ckpt-<step>.pt`` or ``ckpt-best.pt``). Only the algorithm's module state is
taken: network weights, target networks, and, when ``with_data_transformer``,
the data transformers' state (normalizer statistics). Optimizer state, counters,
metrics, RNG states and the replay buffer are not: the new run is a fresh run
that starts from those weights.

The other run is only read (``torch.load(weights_only=True)`` through
``checkpoint_utils``); nothing is ever written there. Every mismatch between the
checkpoint and the new algorithm (a parameter missing on either side, a shape
that differs) raises ``InitFromError`` naming the parameters, the shapes and the
checkpoint file, on one line, before any weight is changed.
"""

from __future__ import annotations

import logging
import os

import torch

from alf.utils.checkpoint_utils import Checkpointer, CheckpointError, safe_load
from alf.utils.mixed_precision import GRAD_SCALER_KEY

OPTIMIZER_PREFIX = "_optimizers."
"""Keys of optimizer states in ``Algorithm.state_dict()`` (never taken)."""

DATA_TRANSFORMER_PREFIX = "_data_transformer."
"""Keys of the data transformers' state in ``RLAlgorithm.state_dict()``."""

CKPT_SUBDIR = os.path.join("train", "algorithm")
_MAX_LISTED = 5


class InitFromError(ValueError):
    """``init_from`` names no usable checkpoint, or one that does not fit the algorithm."""


def resolve_checkpoint(init_from: str) -> tuple[str, dict]:
    """Load the checkpoint that ``init_from`` names (read-only).

    Args:
        init_from: a run's ``root_dir``, a checkpoint directory, or a checkpoint file.

    Returns:
        ``(path, state)``: the checkpoint file loaded and its content.
    Raises:
        InitFromError: the path does not exist, holds no checkpoint, or none of
            its checkpoints can be loaded safely.
    """
    path = os.path.abspath(os.path.expanduser(init_from))
    if os.path.isfile(path):
        return path, _load_file(path)
    if not os.path.isdir(path):
        raise InitFromError(f"init_from '{init_from}' does not exist")
    ckpt_dir = os.path.join(path, CKPT_SUBDIR)
    checkpointer = Checkpointer(ckpt_dir if os.path.isdir(ckpt_dir) else path)
    steps = checkpointer.steps()
    if not steps:
        raise InitFromError(
            f"init_from '{init_from}' holds no checkpoint (no ckpt-<step>.pt in "
            f"{checkpointer.directory})"
        )
    try:
        ckpt_path, state = checkpointer.load_newest(map_location="cpu")
    except CheckpointError as e:
        raise InitFromError(f"init_from '{init_from}': {_first_line(e)}") from e
    return ckpt_path, _check_algorithm_state(ckpt_path, state)


def _load_file(path: str) -> dict:
    try:
        state = safe_load(path, map_location="cpu")
    except CheckpointError as e:
        raise InitFromError(f"init_from: {_first_line(e)}") from e
    return _check_algorithm_state(path, state)


def _check_algorithm_state(path: str, state: dict) -> dict:
    if not isinstance(state.get("algorithm"), dict):
        raise InitFromError(f"init_from: checkpoint {path} holds no algorithm state")
    return state


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def _selected(state: dict, with_data_transformer: bool) -> dict:
    """The entries of an algorithm state dict that initialization takes."""
    return {
        k: v
        for k, v in state.items()
        if not k.startswith(OPTIMIZER_PREFIX)
        and k != GRAD_SCALER_KEY
        and (with_data_transformer or not k.startswith(DATA_TRANSFORMER_PREFIX))
    }


def _listed(names) -> str:
    names = sorted(names)
    more = f" and {len(names) - _MAX_LISTED} more" if len(names) > _MAX_LISTED else ""
    return ", ".join(names[:_MAX_LISTED]) + more


def match_state(target: dict, source: dict, path: str) -> None:
    """Raise ``InitFromError`` unless ``source`` has exactly ``target``'s names and shapes.

    Args:
        target: the new algorithm's (selected) state dict.
        source: the checkpoint's (selected) algorithm state dict.
        path: the checkpoint file (named in the error).
    """
    missing = target.keys() - source.keys()
    unexpected = source.keys() - target.keys()
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing in the checkpoint: {_listed(missing)}")
        if unexpected:
            parts.append(f"not in the new algorithm: {_listed(unexpected)}")
        if any(k.startswith(DATA_TRANSFORMER_PREFIX) for k in missing | unexpected):
            parts.append("init_from_normalizers=False leaves the data transformers out")
        raise InitFromError(
            f"init_from: checkpoint {path} does not match the algorithm; " + "; ".join(parts)
        )
    for name in sorted(target):
        new, old = target[name], source[name]
        tensors = isinstance(new, torch.Tensor) and isinstance(old, torch.Tensor)
        if tensors and new.shape != old.shape:
            raise InitFromError(
                f"init_from: parameter '{name}' has shape {tuple(old.shape)} in checkpoint "
                f"{path} but {tuple(new.shape)} in the new algorithm"
            )


def initialize_from(algorithm, init_from: str, with_data_transformer: bool = True) -> str:
    """Load ``algorithm``'s module state from the checkpoint ``init_from`` names.

    Args:
        algorithm: the freshly built ``RLAlgorithm``.
        init_from: a run's ``root_dir``, a checkpoint directory or a checkpoint file.
        with_data_transformer: also take the data transformers' state
            (normalizer statistics); else they keep their fresh state.

    Returns:
        the checkpoint file the weights came from.
    Raises:
        InitFromError: see ``resolve_checkpoint`` and ``match_state``; the
            algorithm is left unchanged.
    """
    path, state = resolve_checkpoint(init_from)
    source = _selected(state["algorithm"], with_data_transformer)
    target = _selected(algorithm.state_dict(), with_data_transformer)
    match_state(target, source, path)
    algorithm.load_state_dict(source, strict=False)
    logging.info(
        "Initialized the algorithm from %s (%d entries%s; optimizers, counters and "
        "replay buffer start fresh)",
        path,
        len(source),
        "" if with_data_transformer else ", data transformers not taken",
    )
    return path
