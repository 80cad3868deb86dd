"""Random seeds and random-number-generator states (python, numpy, torch)."""

from __future__ import annotations

import logging
import random

import numpy as np
import torch


def set_random_seed(seed: int | None) -> int:
    """Seed python, numpy and torch; draw (and log) a seed when ``seed`` is None.

    Returns:
        the seed used.
    """
    if seed is None:
        seed = draw_seed()
        logging.info("No random_seed given; using random seed %d", seed)
    else:
        logging.info("Random seed: %d", seed)
    seed = int(seed)
    seed_generators(seed)
    return seed


def draw_seed() -> int:
    """A fresh 31-bit seed from the OS's entropy."""
    return int(np.random.SeedSequence().entropy % (2**31 - 1))


def seed_generators(seed: int) -> None:
    """Seed python, numpy and torch with ``seed`` (logs nothing)."""
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def derived_seed(seed: int, *salt: int) -> int:
    """A deterministic 31-bit seed derived from ``seed`` and integers ``salt``."""
    entropy = [int(seed) % (2**63)] + [int(s) % (2**63) for s in salt]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0] % (2**31 - 1))


def get_rng_state() -> dict:
    """The states of python's, numpy's and torch's global generators, as tensors and lists
    (loadable with ``torch.load(weights_only=True)``)."""
    np_state = np.random.get_state()
    py_version, py_internal, py_gauss = random.getstate()
    state = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "name": np_state[0],
            "keys": torch.from_numpy(np_state[1].astype(np.int64)),
            "pos": int(np_state[2]),
            "has_gauss": int(np_state[3]),
            "cached_gaussian": float(np_state[4]),
        },
        "python": {"version": py_version, "internal": list(py_internal), "gauss": py_gauss},
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore generator states written by ``get_rng_state``."""
    torch.set_rng_state(state["torch"])
    np_state = state["numpy"]
    np.random.set_state(
        (
            np_state["name"],
            np_state["keys"].numpy().astype(np.uint32),
            np_state["pos"],
            np_state["has_gauss"],
            np_state["cached_gaussian"],
        )
    )
    py = state["python"]
    random.setstate((py["version"], tuple(py["internal"]), py["gauss"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
