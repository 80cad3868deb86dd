r"""``OacAlgorithm``: SAC exploring with an optimistic shift of the policy's mean.

Ciosek et al. 2019, "Better Exploration with Optimistic Actor-Critic" (NeurIPS 2019,
arXiv:1910.12807), with ALF's ``OacAlgorithm``'s arguments. Training is SAC's
(``SacAlgorithm``); only the rollout differs. The actor is a tanh-squashed Gaussian:
:math:`a = m + h\tanh u`, :math:`u \sim \mathcal N(\mu_T(s), \Sigma_T(s))`,
:math:`\Sigma_T = \mathrm{diag}(\sigma^2)`, :math:`m, h` the action bounds' centre and
half-width. Rollout samples :math:`u` from :math:`\mathcal N(\mu_E, \Sigma_T)` instead,
with the mean moved up the gradient of an upper bound of the twin critics (paper, eq. 12):

.. math::

    Q_{UB}(s, a) &= \bar Q(s, a) + \beta_{UB}\,\sigma_Q(s, a), \qquad
        \bar Q = \tfrac1R \textstyle\sum_i Q_i, \quad
        \sigma_Q = \sqrt{\tfrac1R \textstyle\sum_i (Q_i - \bar Q)^2} \\
    g &= \nabla_u Q_{UB}\big(s, m + h \tanh u\big)\Big|_{u = \mu_T}, \qquad
    \mu_E = \mu_T + \delta_E\,\frac{\Sigma_T\, g}{\sqrt{g^\top \Sigma_T\, g}}

For the twin critics :math:`\sigma_Q = |Q_1 - Q_2| / 2`, the paper's epistemic
uncertainty. The shift has Mahalanobis norm :math:`\delta_E` = ``explore_delta``
(ALF's argument: the paper's :math:`\sqrt{2\delta}`, the KL divergence between the
exploration and the target policy being :math:`\delta = \delta_E^2 / 2`; ALF's default
6.8 and the paper's MuJoCo :math:`\delta = 23.53` agree). ``beta_ub`` is
:math:`\beta_{UB}` (paper: 4.66). ``dqda_clipping`` clips :math:`g` elementwise first
(ALF's option). The norm is per state (the paper's; ALF's takes it over the whole rollout
batch, the same with one environment), plus ``1e-6``, so a zero gradient gives no shift.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

import alf
import alf.nest as nest
from alf.algorithms.sac_algorithm import (
    SacAlgorithm,
    SacRolloutInfo,
    SquashedNormalActorNetwork,
    _squash,
    _squashed_normal_parts,
    sac_arguments,
)
from alf.algorithms.td_loss import OneStepTDLoss
from alf.configuration.argtypes import Count, Probability
from alf.data_structures import AlgStep, TimeStep
from alf.networks.critic_networks import CriticNetwork
from alf.tensor_specs import TensorSpec
from alf.utils.torch_utils import frozen


@alf.configurable
class OacAlgorithm(SacAlgorithm):
    """Optimistic actor-critic (module doc): continuous actions, at least two critics.

    Args:
        explore: roll out with the optimistic exploration policy (False: SAC's policy).
        explore_delta: :math:`\\delta_E`, the Mahalanobis length of the mean's shift.
        beta_ub: :math:`\\beta_{UB}`, the weight of the critics' spread in
            :math:`Q_{UB}`.
        dqda_clipping: clip :math:`\\nabla_u Q_{UB}` elementwise to ``±dqda_clipping``
            (None: no clipping).
        random_initial_collect: act uniformly at random within the action bounds until
            every env has ``config.initial_collect_steps`` steps (ALF's OAC does until
            training starts).
        Other arguments: as ``SacAlgorithm``'s.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        actor_network_ctor: Callable = SquashedNormalActorNetwork,
        critic_network_ctor: Callable = CriticNetwork,
        num_critic_replicas: Count = 2,
        env=None,
        config=None,
        critic_loss_ctor: Callable = OneStepTDLoss,
        target_entropy: float | Callable | None = None,
        initial_log_alpha: float = 0.0,
        use_entropy_reward: bool = True,
        explore: bool = True,
        explore_delta: float = 6.8,
        beta_ub: float = 4.6,
        dqda_clipping: float | None = None,
        target_update_tau: Probability = 0.005,
        target_update_period: Count = 1,
        random_initial_collect: bool = True,
        optimizer=None,
        actor_optimizer=None,
        critic_optimizer=None,
        alpha_optimizer=None,
        reward_weights=None,
        debug_summaries: bool = False,
        name: str = "OacAlgorithm",
    ):
        if action_spec.is_discrete:
            raise ValueError(f"{name} supports continuous actions only, got {action_spec}")
        if num_critic_replicas < 2:
            raise ValueError(f"{name}: Q_UB needs >= 2 critics, got {num_critic_replicas}")
        super().__init__(**sac_arguments(locals()))
        self._explore = explore
        self._explore_delta = explore_delta
        self._beta_ub = beta_ub
        self._dqda_clipping = dqda_clipping

    def rollout_step(self, inputs: TimeStep, state) -> AlgStep:
        """A sample of the exploration policy :math:`\\mathcal N(\\mu_E, \\Sigma_T)`,
        squashed, ``[B, ...]`` (SAC's rollout without ``explore`` and during a
        ``random_initial_collect``)."""
        if not self._explore or (self._random_initial_collect and self.initial_collect_pending()):
            return super().rollout_step(inputs, state)
        dist, _ = self._actor_network(inputs.observation)
        parts = _squashed_normal_parts(dist)
        if parts is None:
            raise ValueError(
                f"{self._name}: exploring needs a tanh-squashed Gaussian policy "
                f"(NormalProjectionNetwork(scale_distribution=True)), got {dist}"
            )
        loc, scale, mean, magnitude = parts
        explore_loc = self.explore_mean(inputs.observation, parts)
        action, _ = _squash((explore_loc, scale, mean, magnitude), torch.randn_like(loc))
        return AlgStep(output=action, state=state, info=SacRolloutInfo(action=action))

    def explore_mean(self, observation, parts) -> torch.Tensor:
        """:math:`\\mu_E` ``[B, A]`` (module doc) from the policy's
        ``(loc, scale, mean, magnitude)`` (``_squashed_normal_parts``) at ``observation``."""
        loc, scale, mean, magnitude = parts
        # Rollout runs in inference mode: the gradient needs ordinary tensors (clones).
        with torch.inference_mode(False), torch.enable_grad(), frozen(self._critic_parameters):
            observation = nest.map_structure(torch.clone, observation)
            u = loc.detach().clone().requires_grad_(True)
            action = torch.addcmul(mean.clone(), magnitude.clone(), u.tanh())
            q, _ = self._critic_networks((observation, action))
            if q.shape[1] == 2:  # the population std of two values (finite gradient at 0)
                spread = (q[:, 0] - q[:, 1]).abs() / 2
            else:
                spread = q.std(1, correction=0)
            q_ub = q.mean(1) + self._beta_ub * spread
            (grad,) = torch.autograd.grad(q_ub.sum(), u)
        if self._dqda_clipping is not None:
            grad = grad.clamp(-self._dqda_clipping, self._dqda_clipping)
        var = scale.detach().square()
        norm = (grad * grad * var).sum(-1, keepdim=True).sqrt() + 1e-6
        return loc.detach() + self._explore_delta * var * grad / norm
