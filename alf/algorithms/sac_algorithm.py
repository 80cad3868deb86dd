r"""``SacAlgorithm``: soft actor-critic for continuous or discrete actions.

Haarnoja et al. 2018a, "Soft Actor-Critic: Off-Policy Maximum Entropy Deep
Reinforcement Learning with a Stochastic Actor" (arXiv:1801.01290), with the
automatic entropy tuning and twin critics of Haarnoja et al. 2018b, "Soft
Actor-Critic Algorithms and Applications" (arXiv:1812.05905); for discrete
actions, Christodoulou 2019, "Soft Actor-Critic for Discrete Action Settings"
(arXiv:1910.07207). The losses are in ``sac_loss.py``.

**Data.** SAC trains on sampled transitions: use ``TrainerConfig(
whole_replay_buffer_training=False, clear_replay_buffer=False,
mini_batch_length=2)`` (length ``L >= 2``: every row but the last is trained,
the last only supplies the next observation). With ``unroll_length=1`` and
``num_updates_per_train_iter=1`` this is one gradient step per environment
step, as in the paper.

**One update** on a time-major ``[T, B]`` minibatch (``train_steps``), with
``s_t`` the observations of rows ``t < T-1`` and ``s_{t+1}`` those of rows
``t >= 1``, computes exactly what the losses need, each as one batched pass:

1. without gradient: :math:`a' \sim \pi(\cdot|s_{t+1})`, the target critics
   :math:`\bar Q_i(s_{t+1}, a')` for all replicas at once, and the soft value
   :math:`V'(s_{t+1}) = \min_i \bar Q_i - \alpha \log\pi(a'|s_{t+1})`;
2. :math:`\tilde a_t = f_\phi(\epsilon; s_t)` and :math:`\log\pi(\tilde a_t|s_t)`
   (reparameterized, with gradient to the actor);
3. the critics :math:`Q_i(s_t, a_t)` at the replayed actions (gradient to the
   critics);
4. the critics :math:`Q_i(s_t, \tilde a_t)` with their parameters frozen
   (``requires_grad`` off during that pass), so the actor loss back-propagates
   through the critics into :math:`\tilde a_t` and the actor only, and the
   backward pass skips the critics' weight gradients there.

All three losses are summed into one backward pass; the actor, critic and α
optimizers each see only their own parameters' gradients. For a tanh-squashed
Gaussian policy, sampling and :math:`\log\pi` are computed in closed form
(``_sample_with_log_prob``) instead of through ``torch.distributions``. After the step the
target critics move towards the critics (``TargetUpdater``, Polyak averaging).

**Bootstrapping** follows ``TimeStep.discount`` through the critic's
``TDLoss``: at a time-limit LAST (discount 1) the target bootstraps from
:math:`V'` of the final observation, at a terminal LAST (discount 0) it does
not; transitions out of a LAST row (across an auto-reset) are not trained.

**No actor** (``actor_network_ctor=None``, discrete actions; ALF's discrete SAC):
the policy is the Boltzmann policy of the critics,
:math:`\pi(a|s) = \mathrm{softmax}_a(\min_i Q_i(s, a) / \alpha)` (``sac_q_policy``),
there is no actor loss, and the critic and α losses are those above with this
:math:`\pi` (held fixed: no gradient flows through it). The default target entropy
is then ALF's, ``dist_utils.calc_default_target_entropy``. An action mask (``action_mask.py``)
restricts π, its entropy and the targets' expectations to the legal actions.

**Episodic returns.** ``SacRolloutInfo.discounted_return`` receives the replayed
steps' returns (``ReplayBuffer.record_episodic_return``); they reach the critic loss,
which a ``LowerBoundedTDLoss`` bounds its targets with.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.distributions as td
import torch.nn as nn
import torch.nn.functional as F

import alf
import alf.nest as nest
from alf.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf.algorithms.sac_loss import sac_loss
from alf.algorithms.sac_q_policy import epsilon_greedy_action, expectation, q_log_probs
from alf.algorithms.td_loss import OneStepTDLoss
from alf.algorithms.transitions import (
    TransitionMask,
    check_transition_length,
    flat_rows,
)
from alf.configuration.argtypes import Count, Probability, ScheduledFloat
from alf.data_structures import AlgStep, Experience, LossInfo, TimeStep
from alf.layers.noisy import noisy_layers
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.critic_networks import CriticNetwork, min_over_replicas
from alf.networks.projection_networks import NormalProjectionNetwork
from alf.networks.q_networks import QNetwork
from alf.tensor_specs import TensorSpec
from alf.utils import action_mask, dist_utils
from alf.utils.math_ops import clipped_exp
from alf.utils.periodic_reset import make_periodic_reset
from alf.utils.target_networks import TargetUpdater
from alf.utils.torch_utils import frozen
from alf.utils.value_ops import pad_first, pad_last

#: The actor SAC needs for continuous actions: a tanh-squashed Gaussian whose std
#: depends on the state (Haarnoja et al. 2018a, appendix C), log-std clipped to [-20, 2].
SquashedNormalActorNetwork = functools.partial(
    ActorDistributionNetwork,
    continuous_projection_net_ctor=functools.partial(
        NormalProjectionNetwork,
        state_dependent_std=True,
        scale_distribution=True,
        std_transform=clipped_exp,
    ),
)


_LOG_2 = math.log(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class SacRolloutInfo(NamedTuple):
    """What rollout stores for training: the action taken ``[B, ...]``; replayed
    experience gets the episodic returns ``[T, B]`` (or ``()``) from the learner."""

    action: object = ()
    discounted_return: object = ()


class SacInfo(NamedTuple):
    """What one update gives ``sac_loss`` (time-major; see ``sac_loss`` for shapes)."""

    reward: object = ()
    step_type: object = ()
    discount: object = ()
    critic_q: object = ()
    target_v: object = ()
    neg_entropy: object = ()
    actor_q: object = ()
    discounted_return: object = ()


class _LogAlpha(nn.Module):
    """The temperature parameter :math:`\\log\\alpha` (a module, so it can have an optimizer)."""

    def __init__(self, initial_value: float):
        super().__init__()
        self.value = nn.Parameter(torch.tensor(float(initial_value)))


def _default_target_entropy(action_spec) -> float:
    """:math:`-\\dim(A)` for continuous actions (Haarnoja et al. 2018b, section 5);
    ``0.5 log|A|`` for discrete ones (Christodoulou 2019 uses ``0.98 log|A|``, which
    keeps the policy nearly uniform; a lower target lets it commit)."""
    if action_spec.is_discrete:
        return 0.5 * math.log(action_spec.num_values)
    return -float(math.prod(action_spec.shape))


@alf.configurable
class SacAlgorithm(OffPolicyAlgorithm):
    """Soft actor-critic with twin critics and automatic entropy tuning.

    Args:
        observation_spec: spec of the (transformed) observation.
        action_spec: one ``BoundedTensorSpec``: continuous (any shape) or a
            scalar discrete one.
        reward_spec: spec of the reward; a vector reward needs ``reward_weights``.
        actor_network_ctor: ``ctor(input_tensor_spec=, action_spec=)`` → a network
            returning the action distribution (continuous: it should be squashed
            into the bounds, as ``SquashedNormalActorNetwork`` is). None (discrete
            actions only): act from the critics (module docstring).
        critic_network_ctor: ``ctor(input_tensor_spec=(obs_spec, action_spec),
            num_replicas=)`` → :math:`Q(s, a)` ``[B, R]`` (continuous actions).
        q_network_ctor: ``ctor(input_tensor_spec=, action_spec=)`` → :math:`Q(s, \\cdot)`
            ``[B, |A|]`` (discrete actions; one per replica).
        num_critic_replicas: number ``R`` of critics; targets and the actor use
            their minimum (2: the twin critics of Fujimoto et al. 2018).
        env: the training environment.
        config: the ``TrainerConfig``.
        critic_loss_ctor: ``ctor()`` → the ``TDLoss`` of the critics (its
            ``gamma`` is SAC's discount).
        target_entropy: :math:`\\bar{\\mathcal H}`; None for the default
            (``_default_target_entropy``; without an actor ALF's
            ``calc_default_target_entropy``); a callable (ALF's form, e.g.
            ``dist_utils.calc_default_target_entropy``) is called with ``action_spec``.
        initial_log_alpha: initial :math:`\\log\\alpha`.
        use_entropy_reward: bootstrap from the soft value
            :math:`\\min_i \\bar Q_i - \\alpha\\log\\pi` (True, SAC) or from
            :math:`\\min_i \\bar Q_i` alone (False).
        target_update_tau: Polyak factor of the target critics.
        target_update_period: update the target critics every so many updates.
        random_initial_collect: act uniformly at random within the action bounds
            until every env has ``config.initial_collect_steps`` steps in the replay
            buffer, as Stable-Baselines3's SAC does before ``learning_starts``. False
            (ALF's SAC): collect them with the untrained policy.
        parameter_reset_period: ALF's periodic reset (Nikishin et al. 2022, "The
            Primacy Bias in Deep Reinforcement Learning"): every so many training
            iterations (``train_iter`` calls, those of the initial collection included,
            as ALF counts them) the actor and the critics get the weights of freshly
            built copies and :math:`\\log\\alpha` its initial value, then the target
            critics are copied from the new critics (and their update period restarts).
            The optimizers' state (Adam's moments) and the replay buffer are kept, as in
            ALF. A number or a schedule; negative: never. The iteration counter is
            checkpointed (``alf.utils.periodic_reset.PeriodicReset``).
        reproduce_locomotion: ALF's switch for its MuJoCo locomotion results: act
            uniformly at random until training starts (``random_initial_collect``), and
            train the actor and :math:`\\alpha` at the next states :math:`s_{t+1}` of
            the transitions instead of :math:`s_t` (ALF masks the policy loss of row 0
            and the critic loss of the last row). Continuous actions only.
        optimizer: default optimizer of parameters no other optimizer claims.
        actor_optimizer: optimizer of the actor network.
        critic_optimizer: optimizer of the critic network(s).
        alpha_optimizer: optimizer of :math:`\\log\\alpha`.
        reward_weights: weights turning a vector reward into the scalar SAC
            maximizes (``reward @ weights``).
        debug_summaries: extra summaries.
        name: name in summaries.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        actor_network_ctor: Callable | None = SquashedNormalActorNetwork,
        critic_network_ctor: Callable | None = CriticNetwork,
        q_network_ctor: Callable | None = QNetwork,
        num_critic_replicas: Count = 2,
        env=None,
        config=None,
        critic_loss_ctor: Callable = OneStepTDLoss,
        target_entropy: float | Callable | None = None,
        initial_log_alpha: float = 0.0,
        use_entropy_reward: bool = True,
        target_update_tau: Probability = 0.005,
        target_update_period: Count = 1,
        random_initial_collect: bool = False,
        parameter_reset_period: ScheduledFloat = -1,
        reproduce_locomotion: bool = False,
        optimizer=None,
        actor_optimizer=None,
        critic_optimizer=None,
        alpha_optimizer=None,
        reward_weights=None,
        debug_summaries: bool = False,
        name: str = "SacAlgorithm",
    ):
        _check_specs(action_spec, reward_spec, reward_weights, name)
        check_transition_length(config, name)
        super().__init__(
            observation_spec=observation_spec,
            action_spec=action_spec,
            reward_spec=reward_spec,
            env=env,
            config=config,
            optimizer=optimizer,
            debug_summaries=debug_summaries,
            name=name,
        )
        self._discrete = action_spec.is_discrete
        self._num_replicas = num_critic_replicas
        if actor_network_ctor is None and not self._discrete:
            raise ValueError(f"{name}: actor_network_ctor=None needs discrete actions")
        self._actor_network = None
        spec, _ = action_mask.split_observation_spec(observation_spec, action_spec, name)
        if actor_network_ctor is not None:
            self._actor_network = actor_network_ctor(
                input_tensor_spec=spec, action_spec=action_spec
            )
        self._critic_networks = self._make_critics(
            spec, action_spec, critic_network_ctor, q_network_ctor
        )
        self._target_critic_networks = _copy_critics(self._critic_networks)
        networks = (self._actor_network, *self._critic_networks.modules())
        for network in (n for n in networks if n is not None):
            if getattr(network, "is_recurrent", False):
                raise ValueError(f"{name} supports feed-forward networks only: {network.name}")
        self._log_alpha = _LogAlpha(initial_log_alpha)
        if target_entropy is None and self._actor_network is None:
            target_entropy = dist_utils.calc_default_target_entropy(action_spec)
        elif target_entropy is None:
            target_entropy = _default_target_entropy(action_spec)
        elif callable(target_entropy):  # ALF's form, e.g. calc_default_target_entropy
            target_entropy = float(target_entropy(action_spec))
        self._target_entropy = target_entropy
        self._use_entropy_reward = use_entropy_reward
        self._random_initial_collect = random_initial_collect or reproduce_locomotion
        self._reproduce_locomotion = reproduce_locomotion
        if reproduce_locomotion and self._discrete:
            raise ValueError(f"{name}.reproduce_locomotion is for continuous actions only")
        self._critic_loss = critic_loss_ctor()
        self._target_updater = TargetUpdater(
            [self._critic_networks],
            [self._target_critic_networks],
            tau=target_update_tau,
            period=target_update_period,
        )
        self._critic_parameters = tuple(self._critic_networks.parameters())
        self._periodic_reset = make_periodic_reset(
            parameter_reset_period,
            [self._actor_network, self._critic_networks, self._log_alpha.value],
            post_processings=[self._target_updater.reset],
            name=name,
        )
        if reward_weights is not None:
            self.register_buffer(
                "_reward_weights", torch.as_tensor(reward_weights, dtype=torch.float32), False
            )
        else:
            self._reward_weights = None
        self._compute_priority = config is not None and config.priority_replay
        for spec, modules in (
            (actor_optimizer, [self._actor_network]),
            (critic_optimizer, [self._critic_networks]),
            (alpha_optimizer, [self._log_alpha]),
        ):
            if spec is not None and modules[0] is not None:  # no actor: ignored, as in ALF
                self.add_optimizer(spec, modules)
        self._transition_mask = TransitionMask()
        # ALF's evaluation samples with probability epsilon_greedy; here only without an
        # actor (the actor's mode is evaluated as before)
        self._epsilon_greedy = 0.0
        if config is not None and self._actor_network is None:
            self._epsilon_greedy = float(config.epsilon_greedy)

    def _make_critics(self, observation_spec, action_spec, critic_network_ctor, q_network_ctor):
        """Continuous: one ``CriticNetwork`` holding all replicas; discrete: a list of
        ``QNetwork``s."""
        if not self._discrete:
            return critic_network_ctor(
                input_tensor_spec=(observation_spec, action_spec),
                num_replicas=self._num_replicas,
            )
        first = q_network_ctor(input_tensor_spec=observation_spec, action_spec=action_spec)
        if getattr(first, "num_quantiles", None) is not None or noisy_layers(first):
            raise ValueError(
                f"{self._name}: q_network_ctor gives a quantile or noisy QNetwork, which SAC "
                "does not train (DqnAlgorithm, QrdqnAlgorithm do)"
            )
        copies = [first.copy() for _ in range(self._num_replicas - 1)]
        return nn.ModuleList([first, *copies])

    # -- properties ----------------------------------------------------------

    @property
    def actor_network(self):
        return self._actor_network

    @property
    def critic_networks(self):
        """The critics: a ``CriticNetwork`` (continuous) or a list of ``QNetwork``s."""
        return self._critic_networks

    @property
    def target_critic_networks(self):
        return self._target_critic_networks

    @property
    def log_alpha(self) -> torch.Tensor:
        """The parameter :math:`\\log\\alpha` (a scalar)."""
        return self._log_alpha.value

    @property
    def target_entropy(self) -> float:
        return self._target_entropy

    # -- acting --------------------------------------------------------------

    def predict_step(self, inputs: TimeStep, state) -> AlgStep:
        """The mode of the policy (deterministic evaluation), ``[B, ...]``; without an
        actor, a sample instead with probability ``TrainerConfig.epsilon_greedy`` (ALF)."""
        observation, mask = action_mask.split_time_step(inputs)
        if self._actor_network is None:
            log_pi = self._log_probs(observation, mask)
            index = epsilon_greedy_action(log_pi, self._epsilon_greedy)
            return AlgStep(output=self._critic_networks[0].index_action(index), state=state)
        dist = action_mask.mask_distribution(self._actor_network(observation)[0], mask)
        return AlgStep(output=dist_utils.get_mode(dist), state=state)

    def rollout_step(self, inputs: TimeStep, state) -> AlgStep:
        """A sample of the policy, ``[B, ...]`` (uniform within the action bounds during
        a ``random_initial_collect``)."""
        observation, mask = action_mask.split_time_step(inputs, self._name)
        if self._random_initial_collect and self.initial_collect_pending():
            batch_size = inputs.step_type.shape[0]
            action = self._action_spec.sample((batch_size,)).to(inputs.step_type.device)
            if mask is not None:  # uniform over the legal actions
                action = action_mask.uniform_legal_action(mask, self._action_spec)
            return AlgStep(output=action, state=state, info=SacRolloutInfo(action=action))
        if self._actor_network is None:
            index = epsilon_greedy_action(self._log_probs(observation, mask), 1.0)
            action = self._critic_networks[0].index_action(index)
            return AlgStep(output=action, state=state, info=SacRolloutInfo(action=action))
        dist = action_mask.mask_distribution(self._actor_network(observation)[0], mask)
        parts = _squashed_normal_parts(dist)
        action = dist.sample() if parts is None else _squash(parts, torch.randn_like(parts[0]))[0]
        return AlgStep(output=action, state=state, info=SacRolloutInfo(action=action))

    # -- training ------------------------------------------------------------

    def train_step(self, inputs: TimeStep, state, rollout_info) -> AlgStep:
        """Not used: SAC's loss pairs each row with the next one, so ``train_steps``
        computes on whole ``[T, B]`` minibatches."""
        raise NotImplementedError(f"{self._name} trains with train_steps on [T, B] experience")

    def train_steps(self, experience: Experience) -> SacInfo:
        """Everything ``sac_loss`` needs from a ``[T, B]`` minibatch (module docstring)."""
        ts = experience.time_step
        num_steps, batch_size = ts.step_type.shape[:2]
        alpha = self._log_alpha.value.detach().exp()
        observation, mask = action_mask.split_time_step(ts)
        next_observation = flat_rows(observation, 1, None)
        observation = flat_rows(observation, None, -1)
        action = flat_rows(experience.rollout_info.action, None, -1)
        steps = (num_steps - 1, batch_size)
        if self._discrete:
            masks = [mask if mask is None else flat_rows(mask, *r) for r in ((None, -1), (1, None))]
            terms = self._discrete_terms(observation, action, next_observation, alpha, masks)
        else:
            terms = self._continuous_terms(observation, action, next_observation, alpha)
        critic_q, target_v, neg_entropy, actor_q = terms
        return SacInfo(
            reward=self._scalar_reward(ts.reward),
            step_type=ts.step_type,
            discount=ts.discount,
            critic_q=pad_last(critic_q.reshape(*steps, -1, *critic_q.shape[2:])),
            target_v=pad_first(target_v.reshape(*steps, *target_v.shape[1:])),
            neg_entropy=neg_entropy.reshape(steps),
            actor_q=actor_q.reshape(steps) if torch.is_tensor(actor_q) else (),
            discounted_return=experience.rollout_info.discounted_return,
        )

    def _continuous_terms(self, observation, action, next_observation, alpha):
        """``(Q_i(s,a) [N, R], V'(s') [N], log π(ã|s) [N], min_i Q_i(s, ã) [N])``.

        A distributional critic adds its value dims: ``Q_i(s,a)`` ``[N, R, ...]`` and
        ``V'(s')`` ``[N, ...]`` (``_target_critic_value``)."""
        with torch.no_grad():
            next_dist, _ = self._actor_network(next_observation)
            next_action, next_log_pi = _sample_with_log_prob(next_dist)
            target_q, _ = self._target_critic_networks((next_observation, next_action))
            target_v = self._target_critic_value(target_q)
            if self._use_entropy_reward:
                target_v = target_v - alpha * next_log_pi.reshape(-1, *(1,) * (target_v.ndim - 1))
        actor_observation = next_observation if self._reproduce_locomotion else observation
        dist, _ = self._actor_network(actor_observation)
        new_action, log_pi = _sample_with_log_prob(dist)
        critic_q, _ = self._critic_networks((observation, action))
        with frozen(self._critic_parameters):
            actor_q, _ = self._critic_networks((actor_observation, new_action))
        return critic_q, target_v, log_pi, self._actor_critic_value(actor_q)

    def _target_critic_value(self, target_q: torch.Tensor) -> torch.Tensor:
        """The target critics' output at ``(s', a')`` (``[N, R]``, ``[N]`` for one critic)
        reduced to the value bootstrapped from, before the entropy term: the minimum over
        the replicas ``[N]``. Subclasses change only this (e.g. a distributional target
        ``[N, K]``, ``qrsac_algorithm``, ``tqc_algorithm``, ``redq_algorithm``)."""
        return min_over_replicas(target_q)

    def _actor_critic_value(self, actor_q: torch.Tensor) -> torch.Tensor:
        """The critics' output at the policy's action ``(s, ã)`` reduced to the ``[N]``
        value the actor maximizes: the minimum over the replicas."""
        return min_over_replicas(actor_q)

    def _discrete_terms(self, observation, action, next_observation, alpha, masks):
        """The same terms with exact expectations over the legal actions (Christodoulou 2019)."""
        with torch.no_grad():
            next_log_pi = self._log_probs(next_observation, masks[1])
            target_q = _stack_q(self._target_critic_networks, next_observation).amin(1)
            if self._use_entropy_reward:
                target_q = target_q - alpha * next_log_pi
            target_v = expectation(next_log_pi, target_q)
        q_all = _stack_q(self._critic_networks, observation)  # [N, R, |A|]
        if self._actor_network is None:  # the critics' Boltzmann policy, held fixed
            log_pi = q_log_probs(q_all.detach(), alpha, masks[0])
        else:
            log_pi = self._log_probs(observation, masks[0])
        index = self._critic_networks[0].action_index(action)
        critic_q = q_all.gather(2, index[:, None, None].expand(-1, q_all.shape[1], 1))
        actor_q = () if self._actor_network is None else expectation(log_pi, q_all.detach().amin(1))
        return critic_q.squeeze(2), target_v, expectation(log_pi, log_pi), actor_q

    def _log_probs(self, observation, mask=None) -> torch.Tensor:
        """``log π(·|s)`` ``[N, |A|]`` of the categorical policy (over the legal actions)."""
        if self._actor_network is None:
            with torch.no_grad():
                q_all = _stack_q(self._critic_networks, observation)
                return q_log_probs(q_all, self._log_alpha.value.exp(), mask)
        logits = self._actor_network(observation)[0].logits  # normalized by the Categorical
        return (
            logits if mask is None else torch.log_softmax(action_mask.mask_logits(logits, mask), -1)
        )

    def _scalar_reward(self, reward):
        if self._reward_weights is None:
            return reward
        return reward @ self._reward_weights

    def calc_loss(self, info: SacInfo) -> LossInfo:
        return sac_loss(
            info,
            self._log_alpha.value,
            self._critic_loss,
            self._target_entropy,
            compute_priority=self._compute_priority,
        )

    def update_from_experience(self, experience: Experience, valid_masks=None) -> LossInfo:
        """As ``RLAlgorithm``'s, with the last row masked out: it has no successor, so
        the loss there is 0 and must not count in the mean."""
        mask = self._transition_mask(experience.time_step.step_type, valid_masks)
        return super().update_from_experience(experience, mask)

    def after_update(self, experience: Experience, train_info) -> None:
        """Polyak-average the target critics towards the critics."""
        self._target_updater()

    def train_iter(self) -> int:
        """``RLAlgorithm.train_iter``, then a count towards ``parameter_reset_period``."""
        steps = super().train_iter()
        if self._periodic_reset is not None:
            self._periodic_reset()
        return steps


def _check_specs(action_spec, reward_spec, reward_weights, name: str) -> None:
    if nest.is_nested(action_spec):
        raise ValueError(f"{name} supports a single action spec, got {action_spec}")
    if action_spec.is_discrete and action_spec.shape != ():
        raise ValueError(f"{name} supports scalar discrete actions, got {action_spec}")
    if reward_spec.shape != () and reward_weights is None:
        raise ValueError(f"{name}: a vector reward {reward_spec} needs reward_weights")


def _copy_critics(critics: nn.Module) -> nn.Module:
    """Same-architecture twins for the targets (their weights are set by ``TargetUpdater``)."""
    if isinstance(critics, nn.ModuleList):
        return nn.ModuleList(c.copy(name=f"target_{c.name}") for c in critics)
    return critics.copy(name=f"target_{critics.name}")


def _squashed_normal_parts(dist):
    """``(loc, scale, mean, magnitude)`` if ``dist`` is a Gaussian pushed through
    ``StableTanh`` and an affine map (``NormalProjectionNetwork(scale_distribution=True)``),
    else None. ``loc``, ``scale``: ``[N, *A]``; ``mean``, ``magnitude``: the action
    bounds' centre and half-width."""
    if not isinstance(dist, td.TransformedDistribution) or len(dist.transforms) != 2:
        return None
    squash, affine = dist.transforms
    if not isinstance(squash, dist_utils.StableTanh) or not isinstance(affine, td.AffineTransform):
        return None
    base = dist.base_dist
    if isinstance(base, td.Independent):
        base = base.base_dist
    if not isinstance(base, td.Normal) or dist.event_shape != base.loc.shape[-1:]:
        return None
    return base.loc, base.scale, affine.loc, affine.scale


def _squash(parts, eps):
    """The action ``mean + magnitude * tanh(loc + scale * eps)``, and ``u = loc + scale * eps``."""
    loc, scale, mean, magnitude = parts
    u = torch.addcmul(loc, scale, eps)
    return torch.addcmul(mean, magnitude, torch.tanh(u)), u


def _sample_with_log_prob(dist):
    r"""A reparameterized sample ``ã`` ``[N, ...]`` and :math:`\log\pi(ã)` ``[N]``.

    For a tanh-squashed Gaussian (``_squashed_normal_parts``) this is the formula of
    Haarnoja et al. 2018a, appendix C, eq. (21), written out: with
    :math:`u = \mu + \sigma\epsilon` and :math:`ã = m + h \tanh u`,
    :math:`\log\pi(ã) = \sum_j \log\mathcal N(\epsilon_j) - \log\sigma_j
    - \log(1 - \tanh^2 u_j) - \log h_j`, with the stable
    :math:`\log(1-\tanh^2 u) = 2(\log 2 - u - \mathrm{softplus}(-2u))`. It equals
    ``dist.rsample()`` and ``dist.log_prob`` (tested) at a third of their cost.
    Other distributions use those.
    """
    parts = _squashed_normal_parts(dist)
    if parts is None:
        action = dist.rsample()
        return action, dist.log_prob(action)
    eps = torch.randn_like(parts[0])
    action, u = _squash(parts, eps)
    log_prob = (
        -0.5 * eps * eps
        - parts[1].log()
        - _HALF_LOG_2PI
        - 2.0 * (_LOG_2 - u - F.softplus(-2.0 * u))
        - parts[3].log()
    )
    return action, log_prob.sum(-1)


def _stack_q(q_networks: nn.ModuleList, observation) -> torch.Tensor:
    """``[N, R, |A|]`` from ``R`` Q networks."""
    return torch.stack([q(observation)[0] for q in q_networks], dim=1)


def sac_arguments(values: dict, **overrides) -> dict:
    """The ``SacAlgorithm`` constructor arguments among ``values`` (a variant's
    ``locals()``), with ``overrides`` in place of some: a variant's signature lists the SAC
    arguments it takes (so that confs can set them on it) and passes them on with this."""
    return {k: v for k, v in values.items() if k in _SAC_ARGUMENTS} | overrides


_SAC_ARGUMENTS = frozenset(inspect.signature(SacAlgorithm.__init__).parameters) - {"self"}
