r"""``DdpgAlgorithm`` and ``Td3Algorithm``: deterministic actor, Q critics, target networks.

DDPG: Lillicrap et al. 2016, "Continuous control with deep reinforcement
learning". TD3: Fujimoto et al. 2018, "Addressing Function Approximation Error
in Actor-Critic Methods" — ``DdpgAlgorithm`` has its three changes as options,
and ``Td3Algorithm`` turns them on:

1. *clipped double Q*: ``num_critic_replicas = 2`` critics, the target is their
   minimum;
2. *target policy smoothing*: the target action gets clipped Gaussian noise;
3. *delayed policy updates*: the actor (and, through ``target_update_period``,
   the targets) are updated every ``actor_update_period`` critic updates.

**Data.** Rollout acts with :math:`\mu_\phi(s) + \mathcal N(0, \sigma^2)` clipped
to the bounds (uniformly random actions during the initial collection, like
Stable-Baselines3's ``learning_starts``; after it, each env's action is instead
uniform in the bounds with probability ``rollout_random_action`` :math:`p`, ALF's
exploration for the Fetch tasks) and stores raw experience. Each update
samples ``mini_batch_size`` sequences of ``mini_batch_length = L >= 2`` steps,
time-major ``[L, B]``; every row ``t < L-1`` is a transition :math:`(s_t, a_t,
r_{t+1}, s_{t+1})` (``L = 2``: one transition per sequence, as in the papers).

**One update** (``train_steps``), with noise and action bounds in units of the
action half-range :math:`m = (high - low) / 2` (the papers' and SB3's numbers
are for actions in ``[-1, 1]``):

.. math::

    \tilde a' &= \mathrm{clip}\big(\mu_{\phi'}(s_{t+1}) + m\,\mathrm{clip}(\epsilon, -c, c),
                 low, high\big), \quad \epsilon \sim \mathcal N(0, \tilde\sigma^2) \\
    y_t &= r_{t+1} + \gamma\, d_{t+1} \min_i Q_{\theta'_i}(s_{t+1}, \tilde a') \\
    L_{critic} &= \textstyle\sum_i \ell\big(y_t, Q_{\theta_i}(s_t, a_t)\big), \qquad
    L_{actor} = -Q_{\theta_1}(s_t, \mu_\phi(s_t)) + \lambda_a \lVert\mu_\phi(s_t)\rVert^2

``OneStepTDLoss`` computes :math:`y_t` and :math:`\ell` (squared error by
default) and follows ``TimeStep.discount`` (docs/design.md, section 3): a time-limit LAST
(:math:`d = 1`) bootstraps from the final observation, a terminal LAST
(:math:`d = 0`) does not, and transitions out of a LAST row (across an auto
reset) are not trained. The actor's critic evaluation runs with the critic
parameters frozen, so :math:`L_{actor}` reaches the actor only; on updates
without an actor step :math:`L_{actor}` is not computed. Both losses are summed
into one backward pass; ``actor_optimizer`` and ``critic_optimizer`` each step
their own parameters. After the step the targets :math:`\phi', \theta'` move
towards :math:`\phi, \theta` (``TargetUpdater``). ``LossInfo.priority`` ``[B]``
is the mean over rows and critics of :math:`|y_t - Q_{\theta_i}(s_t, a_t)|`.
:math:`\lambda_a` is ``action_l2`` (ALF's penalty on the actions' size, 0 by default).

**Episodic returns.** ``DdpgRolloutInfo.discounted_return`` receives the replayed
steps' returns (``ReplayBuffer.record_episodic_return``); they reach the critic loss,
which a ``LowerBoundedTDLoss`` bounds :math:`y_t` with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn as nn

import alf
import alf.summary
from alf.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf.algorithms.td_loss import OneStepTDLoss
from alf.algorithms.transitions import (
    TransitionMask,
    check_sampled_training,
    check_transition_length,
    flat_rows,
)
from alf.configuration.argtypes import Count, Discount, Probability, ScheduledFloat
from alf.data_structures import AlgStep, Experience, LossInfo, StepType, TimeStep
from alf.networks.actor_networks import ActorNetwork, action_bounds
from alf.networks.critic_networks import CriticNetwork, min_over_replicas
from alf.tensor_specs import TensorSpec
from alf.utils.defaults import with_defaults
from alf.utils.math_ops import masked_mean
from alf.utils.schedulers import as_scheduler
from alf.utils.target_networks import TargetUpdater
from alf.utils.torch_utils import frozen
from alf.utils.value_ops import pad_first, pad_last


class DdpgRolloutInfo(NamedTuple):
    """What rollout keeps for training: the action taken ``[B, ...]``; replayed
    experience gets the episodic returns ``[T, B]`` (or ``()``) from the learner."""

    action: object = ()
    discounted_return: object = ()


class DdpgInfo(NamedTuple):
    """What one update gives ``calc_loss``, time-major.

    Attributes:
        reward, step_type, discount: ``[T, B]`` from the time steps.
        critic_q: :math:`Q_{\\theta_i}(s_t, a_t)` ``[T, B, R]`` (``[T, B]`` for one
            critic), with gradient; the last row is 0.
        target_q: :math:`\\min_i Q_{\\theta'_i}(s_t, \\tilde a'_t)` ``[T, B]``, no
            gradient; the first row is 0 (it only bootstraps rows ``t - 1``).
        actor_q: :math:`Q_{\\theta_1}(s_t, \\mu_\\phi(s_t))` ``[T, B]`` (last row 0),
            or ``()`` on updates without an actor step.
        action_sq: :math:`\\lVert\\mu_\\phi(s_t)\\rVert^2` ``[T, B]`` (last row 0), with
            gradient, when ``action_l2 > 0`` and the actor is updated; else ``()``.
        discounted_return: the replayed steps' episodic returns ``[T, B]``, or ``()``.
    """

    reward: object = ()
    step_type: object = ()
    discount: object = ()
    critic_q: object = ()
    target_q: object = ()
    actor_q: object = ()
    action_sq: object = ()
    discounted_return: object = ()


class DdpgLossInfo(NamedTuple):
    """Scalar diagnostics (filled only when summaries are recorded)."""

    critic_loss: object = ()
    actor_loss: object = ()
    q_value: object = ()


def _critic_loss(critic_loss_ctor, gamma, td_error_loss_fn) -> OneStepTDLoss:
    """The critic loss, given only the settings DDPG was given (the others stay the loss
    class's configured or default values)."""
    kwargs = {"gamma": gamma, "td_error_loss_fn": td_error_loss_fn}
    return (critic_loss_ctor or OneStepTDLoss)(
        **{key: value for key, value in kwargs.items() if value is not None}
    )


@alf.configurable
class DdpgAlgorithm(OffPolicyAlgorithm):
    """DDPG with TD3's options (see the module docstring).

    Args:
        observation_spec: spec of the (transformed) observation.
        action_spec: a continuous ``BoundedTensorSpec`` with finite bounds.
        reward_spec: spec of the reward (scalar).
        actor_network_ctor: ``ctor(input_tensor_spec=, action_spec=)`` → a
            deterministic actor returning actions in the bounds (``ActorNetwork``).
        critic_network_ctor: ``ctor(input_tensor_spec=(obs_spec, action_spec),
            num_replicas=)`` → :math:`Q(s, a)` ``[B, R]`` (``[B]`` for one replica).
        num_critic_replicas: number ``R`` of critics; the target uses their
            minimum, the actor the first one.
        env: the training environment.
        config: the ``TrainerConfig`` (``whole_replay_buffer_training=False``,
            ``mini_batch_length >= 2``).
        gamma: discount factor (multiplies ``TimeStep.discount``); None: the critic
            loss's own (``OneStepTDLoss.gamma``, 0.99 unless configured).
        td_error_loss_fn: ``(target, prediction) -> loss`` of the critics; None: the
            critic loss's own (``OneStepTDLoss.td_error_loss_fn``, squared error unless
            configured).
        critic_loss_ctor: ``ctor(**kwargs)`` → the critics' ``OneStepTDLoss`` (ALF's
            argument; None: ``OneStepTDLoss``), called with ``gamma`` and
            ``td_error_loss_fn`` when those are given here, so that ALF confs'
            ``alf.config('OneStepTDLoss', td_error_loss_fn=...)`` reaches DDPG.
            It is called with ``discounted_return=`` (``LowerBoundedTDLoss`` uses it).
        exploration_noise_std: std of the Gaussian rollout noise in units of the
            action half-range: a float, a scheduler, or ``[(progress, std), ...]``.
        random_initial_collect: uniformly random actions until every env has
            ``config.initial_collect_steps`` steps in the replay buffer.
        rollout_random_action: probability in ``[0, 1]`` that an env's rollout action
            is uniform in the bounds instead of the noisy actor action (ALF's; drawn
            per env and step; 0: never, 1: always).
        action_l2: weight :math:`\\lambda_a \\ge 0` of the squared L2 norm of the
            actor's action, added to the actor loss (ALF's).
        target_policy_noise: std :math:`\\tilde\\sigma` of the target policy
            smoothing noise (half-range units; 0: none, as in DDPG).
        target_policy_noise_clip: :math:`c`, the noise is clipped to ``[-c, c]``.
        actor_update_period: update the actor every so many critic updates.
        target_update_tau: Polyak factor of the target networks.
        target_update_period: update the targets every so many updates.
        optimizer: default optimizer of parameters no other optimizer claims.
        actor_optimizer: optimizer of the actor network.
        critic_optimizer: optimizer of the critic network(s).
        debug_summaries: extra summaries.
        name: name in summaries.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        actor_network_ctor: Callable = ActorNetwork,
        critic_network_ctor: Callable = CriticNetwork,
        num_critic_replicas: Count = 1,
        env=None,
        config=None,
        gamma: Discount | None = None,
        td_error_loss_fn: Callable | None = None,
        critic_loss_ctor: Callable | None = None,
        exploration_noise_std: ScheduledFloat = 0.1,
        random_initial_collect: bool = True,
        rollout_random_action: Probability = 0.0,
        action_l2: float = 0.0,
        target_policy_noise: float = 0.0,
        target_policy_noise_clip: float = 0.5,
        actor_update_period: Count = 1,
        target_update_tau: Probability = 0.005,
        target_update_period: Count = 1,
        optimizer=None,
        actor_optimizer=None,
        critic_optimizer=None,
        debug_summaries: bool = False,
        name: str = "DdpgAlgorithm",
    ):
        low, high = action_bounds(action_spec, name)
        _check_args(reward_spec, config, actor_update_period, name)
        if not 0.0 <= rollout_random_action <= 1.0:
            raise ValueError(
                f"{name}: rollout_random_action must be in [0, 1], got {rollout_random_action}"
            )
        if action_l2 < 0:
            raise ValueError(f"{name}: action_l2 must be >= 0, got {action_l2}")
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
        self._actor_network = actor_network_ctor(
            input_tensor_spec=observation_spec, action_spec=action_spec
        )
        self._critic_network = critic_network_ctor(
            input_tensor_spec=(observation_spec, action_spec), num_replicas=num_critic_replicas
        )
        for network in (self._actor_network, self._critic_network):
            if network.is_recurrent:
                raise ValueError(f"{name} supports feed-forward networks only: {network.name}")
        self._target_actor_network = self._actor_network.copy(name="target_actor_network")
        self._target_critic_network = self._critic_network.copy(name="target_critic_network")
        self._target_updater = TargetUpdater(
            [self._actor_network, self._critic_network],
            [self._target_actor_network, self._target_critic_network],
            tau=target_update_tau,
            period=target_update_period,
        )
        self._critic_parameters = tuple(self._critic_network.parameters())
        if actor_optimizer is not None:
            self.add_optimizer(actor_optimizer, [self._actor_network])
        if critic_optimizer is not None:
            self.add_optimizer(critic_optimizer, [self._critic_network])
        self.register_buffer("_low", torch.as_tensor(low, dtype=torch.float32), False)
        self.register_buffer("_high", torch.as_tensor(high, dtype=torch.float32), False)
        self.register_buffer("_magnitude", (self._high - self._low) / 2, False)
        # Counts gradient steps; checkpointed so the actor-update phase survives a resume.
        self.register_buffer("_num_updates", torch.zeros((), dtype=torch.int64))
        self._num_replicas = num_critic_replicas
        self._critic_loss = _critic_loss(critic_loss_ctor, gamma, td_error_loss_fn)
        self._exploration_noise_std = as_scheduler(exploration_noise_std)
        self._random_initial_collect = random_initial_collect
        self._rollout_random_action = float(rollout_random_action)
        self._action_l2 = float(action_l2)
        self._target_policy_noise = target_policy_noise
        self._target_policy_noise_clip = target_policy_noise_clip
        self._actor_update_period = actor_update_period
        self._transition_mask = TransitionMask()

    @property
    def actor_network(self) -> nn.Module:
        return self._actor_network

    @property
    def critic_network(self) -> nn.Module:
        return self._critic_network

    @property
    def target_actor_network(self) -> nn.Module:
        return self._target_actor_network

    @property
    def target_critic_network(self) -> nn.Module:
        return self._target_critic_network

    # -- acting ----------------------------------------------------------------

    def _clip(self, action: torch.Tensor) -> torch.Tensor:
        return torch.maximum(torch.minimum(action, self._high), self._low)

    def _collecting_initial_steps(self) -> bool:
        return self._random_initial_collect and self.initial_collect_pending()

    def predict_step(self, inputs: TimeStep, state) -> AlgStep:
        """:math:`\\mu_\\phi(s)` ``[B, ...]``."""
        action, _ = self._actor_network(inputs.observation)
        return AlgStep(output=action, state=state)

    def _uniform(self, like: torch.Tensor) -> torch.Tensor:
        return self._low + (self._high - self._low) * torch.rand_like(like)

    def rollout_step(self, inputs: TimeStep, state) -> AlgStep:
        """:math:`\\mu_\\phi(s)` plus Gaussian noise, clipped to the bounds ``[B, ...]``
        (uniform in the bounds during the random initial collection, and for each env
        with probability ``rollout_random_action``)."""
        action, _ = self._actor_network(inputs.observation)
        if self._collecting_initial_steps():
            action = self._uniform(action)
        else:
            std = float(self._exploration_noise_std())
            action = self._clip(action + std * self._magnitude * torch.randn_like(action))
            if self._rollout_random_action > 0:
                pick = torch.rand(action.shape[0], device=action.device)
                pick = (pick < self._rollout_random_action).reshape(-1, *[1] * (action.ndim - 1))
                action = torch.where(pick, self._uniform(action), action)
        return AlgStep(output=action, state=state, info=DdpgRolloutInfo(action=action))

    # -- training --------------------------------------------------------------

    def train_step(self, inputs: TimeStep, state, rollout_info) -> AlgStep:
        """Not used: each transition pairs a row with the next one, so ``train_steps``
        computes on whole ``[T, B]`` minibatches."""
        raise NotImplementedError(f"{self._name} trains with train_steps on [T, B] experience")

    def _actor_update_due(self) -> bool:
        return (int(self._num_updates) + 1) % self._actor_update_period == 0

    @torch.no_grad()
    def _target_q(self, next_observation) -> torch.Tensor:
        """:math:`\\min_i Q_{\\theta'_i}(s', \\tilde a')` ``[N]``, smoothed target action."""
        next_action, _ = self._target_actor_network(next_observation)
        if self._target_policy_noise > 0:
            clip = self._target_policy_noise_clip
            noise = (torch.randn_like(next_action) * self._target_policy_noise).clamp(-clip, clip)
            next_action = self._clip(next_action + self._magnitude * noise)
        target_q, _ = self._target_critic_network((next_observation, next_action))
        return min_over_replicas(target_q)

    def train_steps(self, experience: Experience) -> DdpgInfo:
        """Everything ``calc_loss`` needs from a ``[T, B]`` minibatch (module docstring)."""
        ts = experience.time_step
        rows = (ts.step_type.shape[0] - 1, ts.step_type.shape[1])
        observation = flat_rows(ts.observation, None, -1)
        next_observation = flat_rows(ts.observation, 1, None)
        action = flat_rows(experience.rollout_info.action, None, -1)
        target_q = self._target_q(next_observation)
        critic_q, _ = self._critic_network((observation, action))
        actor_q = action_sq = ()
        if self._actor_update_due():
            new_action, _ = self._actor_network(observation)
            with frozen(self._critic_parameters):
                q, _ = self._critic_network((observation, new_action))
            actor_q = pad_last((q[:, 0] if q.ndim == 2 else q).reshape(rows))
            if self._action_l2 > 0:
                action_sq = pad_last(new_action.square().flatten(1).sum(1).reshape(rows))
        return DdpgInfo(
            reward=ts.reward,
            step_type=ts.step_type,
            discount=ts.discount,
            critic_q=pad_last(critic_q.reshape(rows + critic_q.shape[1:])),
            target_q=pad_first(target_q.reshape(rows)),
            actor_q=actor_q,
            action_sq=action_sq,
            discounted_return=experience.rollout_info.discounted_return,
        )

    def calc_loss(self, info: DdpgInfo) -> LossInfo:
        """Critic + actor loss ``[T, B]`` (last row 0) and priority ``[B]``."""
        critic = self._critic_loss(
            info.reward,
            info.step_type,
            info.discount,
            info.critic_q,
            info.target_q,
            discounted_return=info.discounted_return,
        )
        loss = critic.loss
        actor_loss = None
        if isinstance(info.actor_q, torch.Tensor):
            actor_loss = -info.actor_q
            if isinstance(info.action_sq, torch.Tensor):
                actor_loss = actor_loss + self._action_l2 * info.action_sq
            loss = loss + actor_loss
        td_error = critic.extra.td_error[:-1]  # [T-1, B] or [T-1, B, R]
        if td_error.ndim == 3:
            td_error = td_error.abs().mean(-1)
        priority = td_error.abs().mean(0)
        extra = ()
        if alf.summary.should_record_summaries():
            valid = info.step_type[:-1] != StepType.LAST
            extra = DdpgLossInfo(
                critic_loss=masked_mean(critic.loss[:-1], valid),
                actor_loss=() if actor_loss is None else masked_mean(actor_loss[:-1], valid),
                q_value=masked_mean(info.target_q[1:], valid),
            )
        return LossInfo(loss=loss, extra=extra, priority=priority)

    def update_from_experience(self, experience: Experience, valid_masks=None, **kwargs):
        """As ``RLAlgorithm``'s, with the last row masked out: it has no successor."""
        mask = self._transition_mask(experience.time_step.step_type, valid_masks)
        return super().update_from_experience(experience, mask, **kwargs)

    def after_update(self, experience: Experience, train_info) -> None:
        """Count the update; move the targets towards the trained networks."""
        self._num_updates += 1
        self._target_updater()


@alf.configurable
class Td3Algorithm(DdpgAlgorithm):
    """TD3 (Fujimoto et al. 2018): ``DdpgAlgorithm`` with twin critics, target policy
    smoothing (noise 0.2, clip 0.5) and actor and target updates every 2 critic
    updates, the paper's and Stable-Baselines3's defaults. Arguments as
    ``DdpgAlgorithm``; only these defaults differ: ``num_critic_replicas=2``,
    ``target_policy_noise=0.2``, ``actor_update_period=2``,
    ``target_update_period=2``, ``name="Td3Algorithm"``."""

    __init__ = with_defaults(
        DdpgAlgorithm.__init__,
        num_critic_replicas=2,
        target_policy_noise=0.2,
        actor_update_period=2,
        target_update_period=2,
        name="Td3Algorithm",
    )


def _check_args(reward_spec, config, actor_update_period: int, name: str) -> None:
    if reward_spec.shape != ():
        raise ValueError(f"{name} needs a scalar reward, got reward_spec {reward_spec}")
    if actor_update_period < 1:
        raise ValueError(f"{name}: actor_update_period must be >= 1, got {actor_update_period}")
    check_sampled_training(config, name)
    check_transition_length(config, name)
