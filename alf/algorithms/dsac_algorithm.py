r"""``DSacAlgorithm``: distributional soft actor-critic with implicit quantile critics.

ALF's DSAC: SAC (``sac_algorithm.py``) whose critics are implicit quantile networks
(Dabney et al. 2018b, "Implicit Quantile Networks for Distributional Reinforcement
Learning", arXiv:1806.06923; ``CriticQuantileNetwork``): :math:`Z_\tau(s, a)` at any
fraction τ. Every update samples, for every transition, three sets of ``N`` fractions
(one for the critics, one for the target critics, one for the actor):

- ``tau_type='iqn'``: widths :math:`\Delta\tau_k \propto u_k + 0.1`, :math:`u_k \sim
  U(0, 1)`, normalized to sum to 1 (IQN's random fractions; the 0.1 keeps them apart);
  ``'fixed'``: :math:`\Delta\tau_k = 1/N`. The fractions are the bins' midpoints
  :math:`\hat\tau_k = \tau_{k-1} + \Delta\tau_k / 2`, :math:`\tau_k = \sum_{l\le k}
  \Delta\tau_l`.

With ``R`` critics:

- **Target**: the target critics at :math:`(s', a' \sim \pi, \hat\tau')`, reduced over
  the replicas (``_replica_reduce``): the minimum of each quantile for ``R = 2``, the mean
  minus the standard deviation over the replicas for ``R > 2``, or, with
  ``min_critic_by_critic_mean``, the replica of the lowest mean
  :math:`\sum_k \Delta\tau'_k Z_{\hat\tau'_k}`; minus :math:`\alpha\log\pi(a'|s')` with
  ``use_entropy_reward``. These ``N`` samples with probabilities :math:`\Delta\tau'` are
  the target of each critic's quantiles at :math:`\hat\tau` (``TDQRLoss`` with
  ``tau_hat`` and ``next_delta_tau``).
- **Actor**: :math:`J_\pi = \alpha_e \log\pi(\tilde a|s) - \sum_k \Delta\tau_k
  Z_{\beta(\hat\tau_k)}(s, \tilde a)` with the same reduction: with the identity
  ``risk_distortion`` β the mean of the return (risk neutral, ALF's DSAC); a distortion
  such as ``cvar_distortion`` (:math:`\beta(\tau) = \eta\tau`: the mean of the lowest η
  of the returns, CVaR) or ``wang_distortion`` makes the policy risk-averse (η > 0 for
  Wang: risk-seeking; Ma et al. 2020, "DSAC: Distributional Soft Actor Critic for
  Risk-Sensitive Reinforcement Learning", arXiv:2004.14547).
- **α**: SAC's automatic entropy tuning (``alpha_optimizer``), or, with
  ``alpha_optimizer=None`` (ALF's "epistemic alpha"), the fixed
  :math:`e^{\text{initial\_log\_alpha}}` times the epistemic uncertainty of the critics,
  :math:`\alpha_e = \alpha \sum_k \Delta\tau_k\, \mathrm{std}_i Z^i_{\hat\tau_k}(s,
  \tilde a)` (the standard deviation over the replicas; needs ``R ≥ 2``); then
  ``use_entropy_reward`` and ``min_critic_by_critic_mean`` are off, as in ALF.

Continuous actions only (as ALF's).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import torch

import alf
import alf.summary
from alf.algorithms.qrsac_algorithm import with_replica_dim
from alf.algorithms.quantile_td_loss import OneStepTDQRLoss
from alf.algorithms.sac_algorithm import (
    SacAlgorithm,
    SquashedNormalActorNetwork,
    _sample_with_log_prob,
    sac_arguments,
)
from alf.algorithms.sac_loss import SacLossInfo
from alf.algorithms.transitions import flat_rows
from alf.configuration.argtypes import Count, Probability
from alf.data_structures import Experience, LossInfo, StepType
from alf.networks.critic_quantile_networks import CriticQuantileNetwork
from alf.tensor_specs import TensorSpec
from alf.utils.torch_utils import frozen
from alf.utils.value_ops import pad_first, pad_last


class DSacInfo(NamedTuple):
    """``SacInfo``'s fields (``sac_loss``), the fractions and the epistemic std; time-major."""

    reward: object = ()
    step_type: object = ()
    discount: object = ()
    critic_q: object = ()  # [T, B, R, N]: the critics' quantiles at tau_hat
    target_v: object = ()  # [T, B, N]: the target samples (row 0 unused)
    neg_entropy: object = ()  # [T-1, B]
    actor_q: object = ()  # [T-1, B]
    tau_hat: object = ()  # [T, B, N] (last row unused)
    delta_tau: object = ()  # [T, B, N] (last row unused)
    next_delta_tau: object = ()  # [T, B, N]: the target samples' probabilities (row 0 unused)
    q_std: object = ()  # [T-1, B]: the critics' epistemic std at (s, ã), or ()


def cvar_distortion(tau: torch.Tensor, eta: float = 0.25) -> torch.Tensor:
    r"""CVaR at level η: :math:`\beta(\tau) = \eta\tau`."""
    return eta * tau


def wang_distortion(tau: torch.Tensor, eta: float = -0.75) -> torch.Tensor:
    r"""Wang's measure: :math:`\beta(\tau) = \Phi(\Phi^{-1}(\tau) + \eta)`; η < 0 is risk-averse."""
    normal = torch.distributions.Normal(0.0, 1.0)
    return normal.cdf(normal.icdf(tau) + eta)


def sample_fractions(batch_size: int, num: int, tau_type: str, device=None):
    r"""``(tau_hat, delta_tau)`` ``[batch_size, num]`` (module docstring)."""
    if tau_type == "fixed":
        delta_tau = torch.full((batch_size, num), 1.0 / num, device=device)
    else:
        delta_tau = torch.rand(batch_size, num, device=device) + 0.1
        delta_tau = delta_tau / delta_tau.sum(-1, keepdim=True)
    tau = delta_tau.cumsum(-1)
    return tau - 0.5 * delta_tau, delta_tau


@alf.configurable
class DSacAlgorithm(SacAlgorithm):
    """Distributional SAC (module docstring); ALF's arguments.

    Args (the others as ``SacAlgorithm``'s):
        num_quantiles: ``N``, the fractions sampled per transition and role.
        tau_type: ``'iqn'`` (random fractions) or ``'fixed'`` (``N`` equal bins).
        critic_network_ctor: ``ctor(input_tensor_spec=, tau_spec=, num_replicas=)`` →
            :math:`Z_\\tau` ``[B, R, N]`` (``CriticQuantileNetwork``).
        num_critic_replicas: ``R``.
        min_critic_by_critic_mean: reduce the replicas to the one with the lowest mean.
        critic_loss_ctor: ``ctor(num_quantiles=)`` → a ``TDQRLoss``.
        use_entropy_reward: subtract :math:`\\alpha\\log\\pi` from the target samples
            (ALF's DSAC default: False).
        alpha_optimizer: the optimizer of :math:`\\log\\alpha`; None: the epistemic α.
        risk_distortion: β, applied to the actor's fractions (None: risk neutral);
            e.g. ``functools.partial(cvar_distortion, eta=0.25)``.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        num_quantiles: Count = 32,
        tau_type: str = "iqn",
        actor_network_ctor: Callable = SquashedNormalActorNetwork,
        critic_network_ctor: Callable = CriticQuantileNetwork,
        num_critic_replicas: Count = 2,
        min_critic_by_critic_mean: bool = False,
        env=None,
        config=None,
        critic_loss_ctor: Callable = OneStepTDQRLoss,
        target_entropy: float | Callable | None = None,
        initial_log_alpha: float = 0.0,
        use_entropy_reward: bool = False,
        target_update_tau: Probability = 0.005,
        target_update_period: Count = 1,
        random_initial_collect: bool = False,
        optimizer=None,
        actor_optimizer=None,
        critic_optimizer=None,
        alpha_optimizer=None,
        risk_distortion: Callable | None = None,
        reward_weights=None,
        debug_summaries: bool = False,
        name: str = "DSacAlgorithm",
    ):
        if tau_type not in ("fixed", "iqn"):
            raise ValueError(f"{name}: tau_type must be 'fixed' or 'iqn', got {tau_type!r}")
        if action_spec.is_discrete:
            raise ValueError(f"{name} supports continuous actions only, got {action_spec}")
        epistemic = alpha_optimizer is None
        if epistemic and num_critic_replicas < 2:
            raise ValueError(f"{name}: the epistemic alpha (no alpha_optimizer) needs 2+ critics")
        super().__init__(
            **sac_arguments(
                locals(),
                critic_network_ctor=functools.partial(
                    critic_network_ctor, tau_spec=TensorSpec((num_quantiles,))
                ),
                critic_loss_ctor=functools.partial(critic_loss_ctor, num_quantiles=num_quantiles),
                use_entropy_reward=use_entropy_reward and not epistemic,
            )
        )
        if self._reproduce_locomotion:  # e.g. set on SacAlgorithm by a conf
            raise ValueError(f"{name}: SacAlgorithm.reproduce_locomotion is not supported by DSAC")
        self._num_quantiles = num_quantiles
        self._tau_type = tau_type
        self._epistemic_alpha = epistemic
        self._min_critic_by_critic_mean = min_critic_by_critic_mean and not epistemic
        self._risk_distortion = risk_distortion
        if epistemic:  # a constant: no optimizer claims it, no gradient reaches it
            self._log_alpha.value.requires_grad_(False)

    @property
    def epistemic_alpha(self) -> bool:
        """Whether α is scaled by the critics' epistemic std (no ``alpha_optimizer``)."""
        return self._epistemic_alpha

    def _quantiles(self, networks, observation, action, tau_hat) -> torch.Tensor:
        """:math:`Z^i_{\\hat\\tau}(s, a)` ``[B, R, N]``."""
        z, _ = networks(((observation, action), tau_hat))
        return with_replica_dim(z, self._num_replicas)

    def _replica_reduce(self, z: torch.Tensor, delta_tau: torch.Tensor):
        """``[B, R, N]`` → ``([B, N]`` the pessimistic quantiles, ``[B, N]`` the std over
        the replicas or None``)`` (module docstring)."""
        if self._num_replicas == 1:
            return z[:, 0], None
        if self._min_critic_by_critic_mean:
            mean = (z * delta_tau.unsqueeze(1)).sum(-1)
            index = mean.argmin(1)
            return z.gather(1, index[:, None, None].expand(-1, 1, z.shape[-1])).squeeze(1), None
        std = z.std(1)
        if self._num_replicas == 2:
            return z.amin(1), std
        return z.mean(1) - std, std

    def train_steps(self, experience: Experience) -> DSacInfo:
        """Everything ``calc_loss`` needs from a ``[T, B]`` minibatch (module docstring)."""
        ts = experience.time_step
        num_steps, batch_size = ts.step_type.shape[:2]
        steps = (num_steps - 1, batch_size)
        alpha = self._log_alpha.value.detach().exp()
        observation = ts.observation
        next_observation = flat_rows(observation, 1, None)
        observation = flat_rows(observation, None, -1)
        action = flat_rows(experience.rollout_info.action, None, -1)
        n = steps[0] * steps[1]
        tau_hat, delta_tau = sample_fractions(
            3 * n, self._num_quantiles, self._tau_type, ts.step_type.device
        )
        actor_tau_hat, tau_hat, next_tau_hat = tau_hat.split(n)
        actor_delta_tau, delta_tau, next_delta_tau = delta_tau.split(n)
        if self._risk_distortion is not None:
            actor_tau_hat = self._risk_distortion(actor_tau_hat)
        with torch.no_grad():
            next_dist, _ = self._actor_network(next_observation)
            next_action, next_log_pi = _sample_with_log_prob(next_dist)
            target_z = self._quantiles(
                self._target_critic_networks, next_observation, next_action, next_tau_hat
            )
            target_v, _ = self._replica_reduce(target_z, next_delta_tau)
            if self._use_entropy_reward:
                target_v = target_v - alpha * next_log_pi.unsqueeze(-1)
        dist, _ = self._actor_network(observation)
        new_action, log_pi = _sample_with_log_prob(dist)
        critic_z = self._quantiles(self._critic_networks, observation, action, tau_hat)
        with frozen(self._critic_parameters):
            actor_z = self._quantiles(self._critic_networks, observation, new_action, actor_tau_hat)
        actor_z, std = self._replica_reduce(actor_z, actor_delta_tau)
        actor_q = (actor_z * actor_delta_tau).sum(-1)
        q_std = ()
        if self._epistemic_alpha:
            q_std = (std * actor_delta_tau).sum(-1).detach().reshape(steps)

        def rows(x):
            return x.reshape(*steps, *x.shape[1:])

        return DSacInfo(
            reward=self._scalar_reward(ts.reward),
            step_type=ts.step_type,
            discount=ts.discount,
            critic_q=pad_last(rows(critic_z)),
            target_v=pad_first(rows(target_v)),
            neg_entropy=log_pi.reshape(steps),
            actor_q=actor_q.reshape(steps),
            tau_hat=pad_last(rows(tau_hat)),
            delta_tau=pad_last(rows(delta_tau)),
            next_delta_tau=pad_first(rows(next_delta_tau)),
            q_std=q_std,
        )

    def calc_loss(self, info: DSacInfo) -> LossInfo:
        """``J_Z + J_π (+ J_α)`` per row ``[T, B]`` (as ``sac_loss``, with the fractions)."""
        td = self._critic_loss(
            info.reward,
            info.step_type,
            info.discount,
            info.critic_q,
            info.target_v,
            tau_hat=info.tau_hat,
            delta_tau=info.delta_tau,
            next_delta_tau=info.next_delta_tau,
        )
        log_alpha = self._log_alpha.value
        alpha = log_alpha.detach().exp()
        entropy_weight = alpha * info.q_std if self._epistemic_alpha else alpha
        actor_loss = entropy_weight * info.neg_entropy - info.actor_q
        if self._epistemic_alpha:
            alpha_loss = torch.zeros_like(actor_loss)
        else:
            alpha_loss = -log_alpha * (info.neg_entropy.detach() + self._target_entropy)
        loss = td.loss + pad_last(actor_loss + alpha_loss)
        priority = ()
        if self._compute_priority:
            priority = td.extra.td_error[:-1].abs().mean(-1).mean(0)
        extra = ()
        if alf.summary.should_record_summaries():
            valid = info.step_type[:-1] != StepType.LAST
            extra = SacLossInfo(
                critic_loss=td.loss[:-1][valid].mean(),
                actor_loss=actor_loss[valid].mean(),
                alpha_loss=alpha_loss[valid].mean(),
                alpha=(entropy_weight[valid].mean() if self._epistemic_alpha else alpha),
                entropy=-info.neg_entropy[valid].mean(),
                q=info.critic_q[:-1][valid].mean(),
            )
        return LossInfo(loss=loss, extra=extra, priority=priority)
