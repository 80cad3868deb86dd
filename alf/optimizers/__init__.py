"""Optimizer specs: configurable descriptions of torch optimizers (see ``optimizers.py``)."""

from alf.optimizers.optimizers import SGD, Adam, AdamW, OptimizerSpec

__all__ = ["Adam", "AdamW", "OptimizerSpec", "SGD"]
