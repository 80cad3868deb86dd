"""Elementwise loss functions with ALF's names (``alf.utils.losses``).

They are configurables, so a gin conf can name them (``@element_wise_huber_loss``,
``@losses.element_wise_squared_loss``) and a Python conf can import them
(``from alf.utils.losses import element_wise_huber_loss``). Both take
``(target, prediction)`` and return the loss of every element, as ALF's do.
"""

import torch

import alf


@alf.configurable(blacklist=["target", "prediction"])
def element_wise_squared_loss(target: torch.Tensor, prediction: torch.Tensor) -> torch.Tensor:
    """``(target - prediction)^2`` elementwise."""
    return (target - prediction) ** 2


@alf.configurable(blacklist=["target", "prediction"])
def element_wise_huber_loss(target: torch.Tensor, prediction: torch.Tensor) -> torch.Tensor:
    """Huber loss with delta 1, elementwise: ``d^2 / 2`` where ``|d| <= 1``, else
    ``|d| - 1/2``, with ``d = target - prediction``."""
    return torch.nn.functional.huber_loss(prediction, target, reduction="none", delta=1.0)
