"""ALF's import path of ``OneStepTDLoss``: ``from alf.algorithms.one_step_loss import
OneStepTDLoss``. It is alf's TD loss with ``td_lambda = 0`` (``alf.algorithms.td_loss``),
the same configurable (``alf.config('OneStepTDLoss', gamma=0.98)`` configures it)."""

from alf.algorithms.td_loss import OneStepTDLoss

__all__ = ["OneStepTDLoss"]
