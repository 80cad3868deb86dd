r"""The mirror (symmetry) loss term of PPO.

Abdolhosseini, Ling, Xie, van de Panne and Yin, "On Learning Symmetric
Locomotion" (MIG 2019), mirror symmetry loss: with :math:`\Psi_o`, :math:`\Psi_a`
the env's mirror maps of observations and actions (``alf.utils.mirror.Mirror``) and
:math:`\mu(s)` the deterministic action (the mode of :math:`\pi(\cdot|s)`,
``dist_utils.get_mode``; for a tanh-squashed normal the squashed mean),

.. math::

    L^{mirror}_t = \frac{1}{|A|} \big\| \mu(s_t) - \Psi_a(\mu(\Psi_o(s_t))) \big\|^2

(the mean squared error over the action entries), differentiated through both
forward passes. ``PPOLoss`` adds ``mirror_loss_coeff`` × this per step; the
algorithm averages it over the valid (non-LAST, unpadded) steps with the rest of the
loss.

``train_step`` computes the two actions (one extra actor forward, on the mirrored
observations) only when the loss has a mirror (``PPOLoss.mirror`` is not None,
i.e. ``mirror_loss_coeff > 0``) and hands them to the loss as ``MirrorInfo`` in
``ActorCriticInfo.mirror``; otherwise that field is ``()`` and nothing is computed.

The observation the mirror acts on is the one the algorithm sees (after the data
transformers). A per-dimension observation normalizer keeps the map exact only if
its statistics are themselves mirror-symmetric.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

import alf.nest as nest
from alf.utils import dist_utils
from alf.utils.mirror import Mirror


class MirrorInfo(NamedTuple):
    """The two deterministic actions the mirror loss compares, each ``[B, A]``
    (``[T, B, A]`` once stacked).

    Attributes:
        action: :math:`\\mu(s)`.
        mirrored_action: :math:`\\Psi_a(\\mu(\\Psi_o(s)))`.
    """

    action: object = ()
    mirrored_action: object = ()


def mirror_info(actor_network, dist, observation: torch.Tensor, mirror: Mirror) -> MirrorInfo:
    """The ``MirrorInfo`` of one step, with gradient.

    Args:
        actor_network: the (feed-forward) actor, ``(observation, state) -> (dist, state)``.
        dist: its action distribution at ``observation`` (already computed).
        observation: ``[B, D]`` flat observations.
        mirror: the env's mirror maps.
    """
    mirrored_dist, _ = actor_network(mirror.observation(observation), ())
    return MirrorInfo(
        action=dist_utils.get_mode(dist),
        mirrored_action=mirror.action(dist_utils.get_mode(mirrored_dist)),
    )


def mirror_loss(info: MirrorInfo) -> torch.Tensor:
    """Per-step mean squared error ``[T, B]`` between the two actions ``[T, B, A]``."""
    if not torch.is_tensor(info.action):
        raise ValueError(
            "the mirror loss needs ActorCriticInfo.mirror from train_step; the algorithm "
            "computes it only when its loss has a mirror (PPOLoss(mirror=..., "
            "mirror_loss_coeff > 0))"
        )
    return ((info.action - info.mirrored_action) ** 2).mean(-1)


def check_mirror_setup(
    mirror: Mirror | None, observation_spec, action_spec, actor_network, owner: str
) -> None:
    """Raise a ``ValueError`` naming ``owner`` unless the mirror loss can run.

    Needs flat vector observation and continuous action specs of the mirrored sizes,
    and a feed-forward actor (a recurrent actor's state has no mirror image).
    """
    if mirror is None:
        return
    mirror.check_specs(observation_spec, action_spec, owner)
    if not getattr(action_spec, "is_continuous", True):
        raise ValueError(f"{owner}: the mirror loss needs continuous actions, got {action_spec}")
    if nest.flatten(actor_network.state_spec):
        raise ValueError(
            f"{owner}: the mirror loss needs a feed-forward actor network; "
            f"{type(actor_network).__name__} is recurrent"
        )
