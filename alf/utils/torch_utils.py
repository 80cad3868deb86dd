"""Small torch helpers shared by algorithms."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def frozen(parameters):
    """Within the block, ops on ``parameters`` record no gradient for them (gradients
    still flow through them to other inputs); ``requires_grad`` is restored after.

    Used for actor losses through a critic: the critic's weight gradients are
    neither computed nor needed there.
    """
    parameters = list(parameters)
    flags = [p.requires_grad for p in parameters]
    for p in parameters:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in zip(parameters, flags):
            p.requires_grad_(flag)
