r"""Quantile-regression TD losses: ``quantile_huber_loss``, ``TDQRLoss``, ``OneStepTDQRLoss``.

They are defined in ``td_loss.py`` (ALF's module of ``TDQRLoss``) and importable from here.

Dabney et al. 2018, "Distributional Reinforcement Learning with Quantile Regression"
(QR-DQN, arXiv:1710.10044). A distributional critic predicts ``N`` quantiles
:math:`\theta_1..\theta_N` of the return :math:`Z(s, a)` at the fractions
:math:`\hat\tau_i = (2i - 1) / 2N` (the midpoints of ``N`` equal bins); the target
distribution is given by ``N'`` samples :math:`y_j` (e.g.
:math:`r + \gamma d\, \theta'_j(s', a')`), equally likely or with weights :math:`w_j`.
The loss (eq. 10 of the paper) is

.. math::

    \mathcal L = \sum_{i=1}^{N} \frac{1}{N'} \sum_{j=1}^{N'}
        \rho^\kappa_{\hat\tau_i}(y_j - \theta_i), \qquad
    \rho^\kappa_\tau(u) = |\tau - \mathbb 1\{u < 0\}|\, \frac{L_\kappa(u)}{\kappa}, \qquad
    L_\kappa(u) = \begin{cases} u^2 / 2 & |u| \le \kappa \\
                                \kappa (|u| - \kappa / 2) & \text{otherwise} \end{cases}

and with :math:`\kappa = 0` the plain quantile (pinball) loss
:math:`|\tau - \mathbb 1\{u<0\}|\,|u|` (the limit of the above). At the default
:math:`\kappa = 1` this is exactly ALF's ``iqn_huber_loss`` and sb3-contrib's
``quantile_huber_loss``, which leave out the division by κ. ``sum_over_quantiles=False``
(ALF's and sb3-contrib's default) takes the mean over ``i`` instead of the sum.

With sampled fractions (IQN, Dabney et al. 2018b, arXiv:1806.06923, used by DSAC) the
predicted quantiles are at given :math:`\hat\tau_i` and the target samples carry the
probability widths :math:`w_j = \Delta\tau'_j` of theirs: the mean over ``j`` becomes
:math:`\sum_j w_j \rho(\cdot)` (ALF weights by :math:`w_j` and still takes the mean, a
constant factor :math:`1/N'` apart).
"""

from alf.algorithms.td_loss import (
    OneStepTDQRLoss,
    TDQRLoss,
    quantile_huber_loss,
    quantile_midpoints,
)

__all__ = ["OneStepTDQRLoss", "TDQRLoss", "quantile_huber_loss", "quantile_midpoints"]
