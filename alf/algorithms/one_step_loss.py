"""ALF's import path of ``OneStepTDLoss`` and ``OneStepTDQRLoss``: ``from
alf.algorithms.one_step_loss import OneStepTDLoss``. They are alf's TD losses with
``td_lambda = 0`` (``alf.algorithms.td_loss``, ``alf.algorithms.quantile_td_loss``), the
same configurables (``alf.config('OneStepTDLoss', gamma=0.98)`` configures it)."""

from alf.algorithms.quantile_td_loss import OneStepTDQRLoss
from alf.algorithms.td_loss import OneStepTDLoss

__all__ = ["OneStepTDLoss", "OneStepTDQRLoss"]
