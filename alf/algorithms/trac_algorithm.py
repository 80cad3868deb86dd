"""``TracAlgorithm``: trust-region actor-critic (ALF's ``TracAlgorithm``).

After every gradient step of the wrapped actor-critic algorithm, the action
distributions of the actor on the training batch are compared before and after the
step. For each action spec the change is

- categorical actions: ``sqrt(mean ||logits_new - logits_old||^2)``;
- deterministic actions (a tensor): ``sqrt(mean ||a_new - a_old||^2)``;
- other distributions: ``sqrt(mean (KL(old||new) + KL(new||old)))`` (of the base
  distribution: a squashing bijector applied to both does not change the KL);

the mean over all ``T * B`` samples of the batch, LAST steps counted as zero (as ALF).
The bound of a spec is ``sqrt(action_dist_clip_per_dim * dims)`` with ``dims`` the number
of action dims (times the number of values for a discrete spec). While the largest
``change / bound`` ratio is above 1, the actor's parameters are moved back towards their
values before the step: ``w = w_old + 0.9 / ratio * (w - w_old)``, and the change is
measured again. So the step is kept but scaled down until the policy moves by at most the
bound. The critic's step and the optimizer's state are not touched (as ALF).

In alf ``TracAlgorithm(...)`` builds ``ac_algorithm_cls`` (``ActorCriticAlgorithm``,
``PPOAlgorithm``, ``SarsaAlgorithm`` or a subclass) with this trust-region step added, as
a subclass of it:
its configured values, checkpoints and ``play`` are those of ``ac_algorithm_cls``.
The actor must be feed-forward.
"""

from __future__ import annotations

import logging
import math

import torch
import torch.distributions as td

import alf
import alf.nest as nest
import alf.summary
from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf.algorithms.sarsa_algorithm import SarsaAlgorithm
from alf.data_structures import StepType
from alf.tensor_specs import TensorSpec
from alf.utils import action_mask

_MAX_ADJUST_STEPS = 100


def action_dist_bound(spec, clip_per_dim: float) -> float:
    """The bound of the change of the action distribution of ``spec`` (module doc)."""
    dims = math.prod(spec.shape)
    if spec.is_discrete:
        dims *= int((spec.maximum - spec.minimum).max()) + 1
    return math.sqrt(clip_per_dim * dims)


def _base(dist):
    while isinstance(dist, td.TransformedDistribution):
        dist = dist.base_dist
    return dist


def _categorical(dist):
    base = dist
    while isinstance(base, (td.Independent, td.TransformedDistribution)):
        base = base.base_dist
    return base if isinstance(base, td.Categorical) else None


def sample_change(old, new) -> torch.Tensor:
    """Per-sample change ``[N]`` between two distributions (or action tensors) of one
    action spec, before the mean and the square root of the module doc."""
    if isinstance(old, torch.Tensor):
        return (new - old).pow(2).flatten(1).sum(1)
    old_cat, new_cat = _categorical(old), _categorical(new)
    if old_cat is not None:
        return (new_cat.logits - old_cat.logits).pow(2).flatten(1).sum(1)
    old_base, new_base = _base(old), _base(new)
    kl = td.kl_divergence(old_base, new_base) + td.kl_divergence(new_base, old_base)
    return kl.reshape(kl.shape[0], -1).sum(1)


class _TrustRegion:
    """Mixin (before an actor-critic class in the MRO) adding the trust-region step."""

    def _setup_trust_region(self, action_dist_clip_per_dim: float) -> None:
        if self._actor_network.is_recurrent:
            raise ValueError(
                f"TracAlgorithm supports feed-forward actors only: {self._actor_network.name}"
            )
        self._trac_bounds = [
            action_dist_bound(s, action_dist_clip_per_dim) for s in nest.flatten(self.action_spec)
        ]
        self.trac_adjust_steps = 0  # of the last update
        self.trac_unadjusted_change = []  # of the last update, per action spec

    def _actor_dists(self, observation):
        """The actor's distributions on ``[T, B]`` observations, flattened (over the legal
        actions with an action mask, ``alf/utils/action_mask.py``)."""
        observation, mask = action_mask.split_observation(observation)
        flat = nest.map_structure(lambda x: x.flatten(0, 1), observation)
        dist, _ = self._actor_network(flat, ())
        if mask is not None:
            mask = action_mask.legal_mask(mask.flatten(0, 1))
        return nest.flatten(action_mask.mask_distribution(dist, mask))

    def _change(self, observation, old_dists, valid):
        """``[change per action spec]`` of the current actor against ``old_dists``."""
        with torch.no_grad():
            new_dists = self._actor_dists(observation)
            size = valid.numel()
            return [
                float((sample_change(o, n) * valid).sum() / size) ** 0.5
                for o, n in zip(old_dists, new_dists)
            ]

    def update_from_experience(self, experience, valid_masks=None):
        """The wrapped algorithm's update, then the trust-region scaling of its actor step."""
        params = [p for p in self._actor_network.parameters() if p.requires_grad]
        old_params = [p.detach().clone() for p in params]
        observation = experience.time_step.observation
        valid = experience.time_step.step_type != StepType.LAST
        if valid_masks is not None:
            valid = valid & valid_masks
        valid = valid.flatten().to(torch.float32)
        with torch.no_grad():
            old_dists = self._actor_dists(observation)
        loss_info = super().update_from_experience(experience, valid_masks)
        self.trust_region_step(
            params, old_params, lambda: self._change(observation, old_dists, valid)
        )
        return loss_info

    @torch.no_grad()
    def trust_region_step(self, params, old_params, change_fn) -> int:
        """Scale the step ``params - old_params`` down until every change of
        ``change_fn()`` is within its bound (module doc); the number of scalings."""
        change = change_fn()
        self.trac_unadjusted_change = change
        steps = 0
        ratio = max(c / b for c, b in zip(change, self._trac_bounds))
        while ratio > 1.0 and steps < _MAX_ADJUST_STEPS:
            scale = 0.9 / ratio
            for param, old in zip(params, old_params):
                param.copy_(old + scale * (param - old))
            ratio = max(c / b for c, b in zip(change_fn(), self._trac_bounds))
            steps += 1
        if ratio > 1.0:  # not finite, or no smaller step reduces the change
            for param, old in zip(params, old_params):
                param.copy_(old)
            logging.warning(
                "%s: the actor step could not be brought within the trust region "
                "(change %s, bounds %s); the actor keeps its weights for this update",
                self.name,
                change,
                self._trac_bounds,
            )
        self.trac_adjust_steps = steps
        if alf.summary.should_record_summaries():
            alf.summary.scalar("trac/adjust_steps", steps)
            for i, c in enumerate(change):
                alf.summary.scalar(f"trac/unadjusted_action_dist/{i}", c)
        return steps


_TRAC_CLASSES = {}


def trac_class(ac_algorithm_cls):
    """The subclass of ``ac_algorithm_cls`` with the trust-region step (cached)."""
    if not (
        isinstance(ac_algorithm_cls, type)
        and issubclass(ac_algorithm_cls, (ActorCriticAlgorithm, SarsaAlgorithm))
    ):
        raise ValueError(
            "TracAlgorithm.ac_algorithm_cls must be ActorCriticAlgorithm, SarsaAlgorithm or "
            f"a subclass (e.g. PPOAlgorithm), got {ac_algorithm_cls!r}"
        )
    if ac_algorithm_cls not in _TRAC_CLASSES:
        name = "Trac" + ac_algorithm_cls.__name__
        _TRAC_CLASSES[ac_algorithm_cls] = type(name, (_TrustRegion, ac_algorithm_cls), {})
    return _TRAC_CLASSES[ac_algorithm_cls]


@alf.configurable
def TracAlgorithm(  # noqa: N802 (ALF's public name)
    observation_spec,
    action_spec,
    reward_spec=TensorSpec(()),
    env=None,
    config=None,
    ac_algorithm_cls=ActorCriticAlgorithm,
    action_dist_clip_per_dim: float = 0.01,
    debug_summaries: bool = False,
    name: str = "TracAlgorithm",
):
    """Build ``ac_algorithm_cls`` with the trust-region step of the module doc.

    Args:
        observation_spec, action_spec, reward_spec, env, config: as for any algorithm.
        ac_algorithm_cls: ``ActorCriticAlgorithm``, ``SarsaAlgorithm`` or a subclass
            (configured as usual).
        action_dist_clip_per_dim: the allowed change per action dim (module doc).
        debug_summaries: passed to the algorithm when True.
        name: the algorithm's name.
    """
    if action_dist_clip_per_dim <= 0:
        raise ValueError(
            f"TracAlgorithm.action_dist_clip_per_dim must be > 0, got {action_dist_clip_per_dim}"
        )
    kwargs = dict(debug_summaries=True) if debug_summaries else {}
    algorithm = trac_class(ac_algorithm_cls)(
        observation_spec=observation_spec,
        action_spec=action_spec,
        reward_spec=reward_spec,
        env=env,
        config=config,
        name=name,
        **kwargs,
    )
    algorithm._setup_trust_region(action_dist_clip_per_dim)
    return algorithm
