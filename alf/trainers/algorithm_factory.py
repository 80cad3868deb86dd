"""The trainer's checks of a built algorithm; ``create_algorithm`` itself is in
``alf.algorithms.factory`` (below the samplers, which build policy copies with it)."""

from __future__ import annotations

from alf.algorithms.factory import create_algorithm

__all__ = ["check_optimizers", "create_algorithm"]


def check_optimizers(algorithm) -> None:
    """Build the optimizers now: trainable parameters without one are a ``ValueError``."""
    algorithm.optimizers()
    if algorithm.modules_without_optimizer:
        name = algorithm.name
        modules = [
            f"{m} ({type(getattr(algorithm, m, None)).__name__})"
            for m in algorithm.modules_without_optimizer
        ]
        # the configurable whose optimizer argument is the default (Agent for its parts)
        conf_name = getattr(algorithm, "default_optimizer_conf", name)
        raise ValueError(
            f"{name}: the parameters of {', '.join(modules)} have no optimizer, so they "
            f"would never be trained (set {conf_name}.optimizer)"
        )
