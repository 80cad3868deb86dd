r"""``SarsaAlgorithm``: on-policy TD critics for a DDPG- or SAC-style actor (ALF's SARSA).

The critics learn the value of the policy that acts, not of the greedy one
(https://en.wikipedia.org/wiki/State-action-reward-state-action):

.. math::

    L_{critic} = \sum_i \big(Q_i(s_{t-1}, a_{t-1}) - y_t\big)^2, \qquad
    y_t = r_t + \gamma\, d_t \min_i Q'_i(s_t, a'_t)

where :math:`a'_t` is the action the *exploring* policy takes at :math:`s_t`, drawn
afresh from the current actor when the update is made:

- a deterministic actor (``ActorNetwork``, DDPG style): :math:`a'_t = \mu_\phi(s_t) +
  n_t`, with :math:`n_t` the next value of the Ornstein-Uhlenbeck noise
  (``OUProcess(ou_damping, ou_stddev)``) from the noise state the rollout had before
  step ``t`` (stored in the replay buffer with the step), as the rollout draws it;
- a distribution actor (``ActorDistributionNetwork``, SAC style): :math:`a'_t \sim
  \pi_\phi(\cdot|s_t)`, reparameterized.

The actor is trained as in DDPG / SAC through the critics at that same action
:math:`a'_t`, in ALF's form: with :math:`g = \nabla_a \min_i Q_i(s_t, a)|_{a'_t}` (no
gradient to the critics; clipped to ``[-dqda_clipping, dqda_clipping]`` when that is
set), :math:`L_{actor} = \tfrac12 \| \mathrm{sg}(g + a'_t) - a'_t \|^2`, whose gradient
is :math:`-g\,\partial a'_t/\partial\phi`. A distribution actor with ``initial_alpha``
also gets SAC's entropy terms: :math:`\alpha \log\pi(a'_t|s_t)` in the actor loss,
:math:`J_\alpha = -\log\alpha\, \mathrm{sg}(\log\pi(a'_t|s_t) + \bar{\mathcal H})` when
``alpha_optimizer`` is set (else α stays ``initial_alpha``), and, with
``use_entropy_reward``, the soft target :math:`y_t = r_t + \gamma d_t (\min_i Q'_i(s_t,
a'_t) - \alpha \log\pi(a'_t|s_t))`.

**Data: as ALF trains it.** ALF's SARSA confs (``sarsa_ddpg.gin``, ``sarsa_sac.gin``)
train off-policy from a replay buffer with ``mini_batch_length=1`` and
``use_rollout_state=True``: each stored step ``t`` carries the rollout state it was
taken from, which holds :math:`s_{t-1}` (``SarsaState.prev_observation``) and the noise
state, while :math:`a_{t-1}` is the step's ``prev_action`` and :math:`r_t`, :math:`d_t`
its reward and discount. So every replayed row ``t`` is one transition
:math:`(s_{t-1}, a_{t-1}) \to (r_t, s_t)`; the target's action :math:`a'_t` is the
current policy's (with its exploration), never the replayed, older one. In a sequence of
``L > 1`` rows, row ``t > 0`` takes :math:`s_{t-1}` from row ``t-1`` (as freshly
transformed as row ``t``), row 0 from the stored state (whether or not
``use_rollout_state`` is set: it is the only place :math:`s_{-1}` is). The critic loss
of rows ``t > 0`` can then be TD(λ) (``critic_loss_cls=TDLoss``), as in ALF.

A row that is FIRST has no previous step, and trains the actor only. A LAST row trains
the critic on the transition into it (a terminal LAST, discount 0, does not bootstrap;
a time-limit LAST, discount 1, bootstraps from :math:`Q'(s_T, a'_T)`, the policy's
action at the final observation) but not the actor (the env ignores the action taken
there). The critic loss is therefore given as ``LossInfo.scalar_loss``, ALF's way, not
masked by LAST: its mean over all ``T x B`` rows (FIRST rows count as 0), weighted by
the importance weights of prioritized replay, whose priority ``[B]`` is
:math:`\sqrt{\text{mean critic loss}}` of each sequence's non-FIRST rows.

After each update the target critics move towards the critics (``TargetUpdater``);
with ``use_smoothed_actor`` a Polyak-averaged copy of the actor acts in rollout and
evaluation (the same ``tau`` and ``period``).

**Acting.** Rollout acts with :math:`\mu_\phi(s) + n` (OU noise, not clipped to the
bounds, as ALF) or a sample of :math:`\pi_\phi`. Evaluation acts with :math:`\mu_\phi(s)`
or the mode of :math:`\pi_\phi`, each row exploring as in rollout with probability
``epsilon_greedy`` (``TrainerConfig.epsilon_greedy`` when None).

**Differences from ALF's SarsaAlgorithm**: ``on_policy=True`` (ALF's untested mode that
unrolls with gradients and trains on the unroll; its test calls it very unstable and
no ALF conf uses it) is refused, as are recurrent networks (ALF's confs use none); the
entropy reward is discounted by :math:`d_t` as in SAC (ALF's SARSA leaves
:math:`d_t` out, giving a terminal step an entropy bonus for an action never taken).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import torch

import alf
import alf.nest as nest
import alf.summary
from alf.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf.algorithms.sac_algorithm import _LogAlpha, _sample_with_log_prob
from alf.algorithms.td_loss import OneStepTDLoss
from alf.configuration.argtypes import Count, Probability
from alf.data_structures import AlgStep, Experience, LossInfo, StepType, TimeStep
from alf.learners.learner import sample_weights
from alf.networks.actor_networks import ActorNetwork
from alf.networks.critic_networks import CriticNetwork, min_over_replicas
from alf.networks.ou_process import OUProcess
from alf.tensor_specs import TensorSpec
from alf.utils import dist_utils
from alf.utils.math_ops import masked_mean
from alf.utils.target_networks import TargetUpdater
from alf.utils.torch_utils import frozen
from alf.utils.value_ops import pad_first, pad_last


class SarsaState(NamedTuple):
    """The rollout state (stored with each step in the replay buffer).

    Attributes:
        prev_observation: the observation of the previous step, :math:`s_{t-1}`.
        noise: the OU noise state (a deterministic actor; ``()`` otherwise).
    """

    prev_observation: Any = ()
    noise: Any = ()


class SarsaInfo(NamedTuple):
    """What one update gives ``calc_loss``, time-major ``[T, B]``.

    Attributes:
        reward, step_type, discount: of the rows' time steps (:math:`r_t, d_t`).
        critics: :math:`Q_i(s_{t-1}, a_{t-1})` ``[T, B, R]``, with gradient.
        target_critics: :math:`\\min_i Q'_i(s_t, a'_t)` ``[T, B]``, no gradient.
        actor_loss: ALF's DDPG-form actor loss at :math:`a'_t` ``[T, B]``.
        neg_entropy: :math:`\\log\\pi(a'_t|s_t)` ``[T, B]`` (a distribution actor with
            entropy regularization; ``()`` otherwise).
    """

    reward: Any = ()
    step_type: Any = ()
    discount: Any = ()
    critics: Any = ()
    target_critics: Any = ()
    actor_loss: Any = ()
    neg_entropy: Any = ()


class SarsaLossInfo(NamedTuple):
    """Scalar diagnostics (filled only when summaries are recorded)."""

    actor: Any = ()
    critic: Any = ()
    alpha: Any = ()
    neg_entropy: Any = ()


def _is_distribution_output(network) -> bool:
    return any(
        isinstance(s, dist_utils.DistributionSpec) for s in nest.flatten(network.output_spec)
    )


@alf.configurable
class SarsaAlgorithm(OffPolicyAlgorithm):
    """SARSA for continuous actions with a DDPG- or SAC-style actor (module doc).

    Args:
        observation_spec: spec of the (transformed) observation.
        action_spec: one continuous ``BoundedTensorSpec``.
        actor_network_ctor: ``ctor(input_tensor_spec=, action_spec=)`` → a deterministic
            actor (``ActorNetwork``: DDPG style, OU exploration) or one returning a
            distribution (``ActorDistributionNetwork``: SAC style).
        critic_network_ctor: ``ctor(input_tensor_spec=(obs_spec, action_spec),
            num_replicas=)`` → :math:`Q(s, a)` ``[B, R]`` (``[B]`` for one).
        reward_spec: spec of the reward (scalar).
        num_critic_replicas: number ``R`` of critics; targets and the actor use their
            minimum.
        env: the training environment.
        config: the ``TrainerConfig`` (ALF's SARSA confs: ``mini_batch_length=1``,
            ``use_rollout_state=True``, ``whole_replay_buffer_training=False``).
        critic_loss_cls: ``ctor()`` → the critics' ``TDLoss`` (its ``gamma`` is SARSA's
            discount; ``TDLoss`` for TD(λ) over sequences).
        target_entropy: :math:`\\bar{\\mathcal H}` of a distribution actor; None: ALF's
            ``dist_utils.calc_default_target_entropy`` of the action spec; a callable is
            called with the action spec.
        epsilon_greedy: probability that evaluation explores as rollout does (per row);
            None: ``config.epsilon_greedy`` (0 without a config).
        use_entropy_reward: a distribution actor's targets are soft values (module doc).
        calculate_priority: return priorities for prioritized replay; None:
            ``config.priority_replay``.
        initial_alpha: initial entropy weight α of a distribution actor; None: no
            entropy terms. Ignored for a deterministic actor.
        ou_stddev, ou_damping: the OU exploration noise of a deterministic actor.
        optimizer: default optimizer of parameters no other optimizer claims.
        actor_optimizer: optimizer of the actor network.
        critic_optimizer: optimizer of the critics.
        alpha_optimizer: optimizer of :math:`\\log\\alpha` (None: α stays fixed).
        target_update_tau: Polyak factor of the target critics (and smoothed actor).
        target_update_period: update them every so many updates.
        use_smoothed_actor: act with a Polyak-averaged copy of the actor.
        dqda_clipping: clip :math:`\\nabla_a Q` element-wise to ``[-c, c]`` in the actor
            loss (0: no clipping).
        on_policy: ALF's on-policy mode; only False (module doc).
        checkpoint: ALF's partial checkpoint loading; only None (use
            ``TrainerConfig.init_from``).
        debug_summaries: extra summaries.
        name: name in summaries.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        actor_network_ctor: Callable = ActorNetwork,
        critic_network_ctor: Callable = CriticNetwork,
        reward_spec=TensorSpec(()),
        num_critic_replicas: Count = 2,
        env=None,
        config=None,
        critic_loss_cls: Callable = OneStepTDLoss,
        target_entropy: float | Callable | None = None,
        epsilon_greedy: Probability | None = None,
        use_entropy_reward: bool = False,
        calculate_priority: bool | None = None,
        initial_alpha: float | None = 1.0,
        ou_stddev: float = 0.2,
        ou_damping: float = 0.15,
        optimizer=None,
        actor_optimizer=None,
        critic_optimizer=None,
        alpha_optimizer=None,
        target_update_tau: Probability = 0.05,
        target_update_period: Count = 10,
        use_smoothed_actor: bool = False,
        dqda_clipping: float = 0.0,
        on_policy: bool = False,
        checkpoint: str | None = None,
        debug_summaries: bool = False,
        name: str = "SarsaAlgorithm",
    ):
        _check_args(action_spec, reward_spec, on_policy, checkpoint, name)
        actor_network = actor_network_ctor(
            input_tensor_spec=observation_spec, action_spec=action_spec
        )
        critic_networks = critic_network_ctor(
            input_tensor_spec=(observation_spec, action_spec), num_replicas=num_critic_replicas
        )
        for network in (actor_network, critic_networks):
            if network.is_recurrent:
                raise ValueError(f"{name} supports feed-forward networks only: {network.name}")
        deterministic = not _is_distribution_output(actor_network)
        noise_spec = action_spec if deterministic else ()
        super().__init__(
            observation_spec=observation_spec,
            action_spec=action_spec,
            reward_spec=reward_spec,
            train_state_spec=(),
            rollout_state_spec=SarsaState(prev_observation=observation_spec, noise=noise_spec),
            predict_state_spec=SarsaState(noise=noise_spec) if deterministic else (),
            env=env,
            config=config,
            optimizer=optimizer,
            debug_summaries=debug_summaries,
            name=name,
        )
        self._actor_network = actor_network
        self._critic_networks = critic_networks
        self._target_critic_networks = critic_networks.copy(name="target_critic_networks")
        self._deterministic = deterministic
        self._noise_process = (
            OUProcess(action_spec, damping=ou_damping, stddev=ou_stddev) if deterministic else None
        )
        if epsilon_greedy is None:
            epsilon_greedy = 0.0 if config is None else config.epsilon_greedy
        self._epsilon_greedy = epsilon_greedy
        if calculate_priority is None:
            calculate_priority = config is not None and config.priority_replay
        self._calculate_priority = calculate_priority
        self._num_replicas = num_critic_replicas
        self._critic_loss = critic_loss_cls()
        self._dqda_clipping = dqda_clipping

        self._log_alpha = None
        self._target_entropy = None
        self._use_entropy_reward = False
        if initial_alpha is not None and not deterministic:
            self._log_alpha = _LogAlpha(math.log(initial_alpha))
            if alpha_optimizer is None:  # a fixed α, as ALF's plain tensor
                self._log_alpha.value.requires_grad_(False)
            else:
                self.add_optimizer(alpha_optimizer, [self._log_alpha])
            if target_entropy is None:
                target_entropy = dist_utils.calc_default_target_entropy
            if callable(target_entropy):
                target_entropy = float(target_entropy(action_spec))
            self._target_entropy = target_entropy
            self._use_entropy_reward = use_entropy_reward

        models, targets = [critic_networks], [self._target_critic_networks]
        self._rollout_actor_network = actor_network
        if use_smoothed_actor:
            self._rollout_actor_network = actor_network.copy(name="rollout_actor_network")
            models.append(actor_network)
            targets.append(self._rollout_actor_network)
        self._target_updater = TargetUpdater(
            models, targets, tau=target_update_tau, period=target_update_period
        )
        self._critic_parameters = tuple(critic_networks.parameters())
        if actor_optimizer is not None:
            self.add_optimizer(actor_optimizer, [actor_network])
        if critic_optimizer is not None:
            self.add_optimizer(critic_optimizer, [critic_networks])
        self._critic_weights = None  # [T, B] of the update in progress (update_from_experience)

    # -- properties ----------------------------------------------------------

    @property
    def actor_network(self):
        return self._actor_network

    @property
    def critic_networks(self):
        return self._critic_networks

    @property
    def target_critic_networks(self):
        return self._target_critic_networks

    @property
    def log_alpha(self) -> torch.Tensor | None:
        """:math:`\\log\\alpha` (None without entropy terms)."""
        return None if self._log_alpha is None else self._log_alpha.value

    @property
    def target_entropy(self) -> float | None:
        return self._target_entropy

    # -- acting --------------------------------------------------------------

    def _exploring_action(self, output, noise_state):
        """``(a', new noise state)``: :math:`\\mu(s) + n` (OU) or a reparameterized sample
        of the distribution ``output``; and, for a distribution, :math:`\\log\\pi(a')`."""
        if self._deterministic:
            noise, noise_state = self._noise_process(noise_state)
            return output + noise, noise_state, None
        action, log_pi = _sample_with_log_prob(output)
        return action, (), log_pi

    def predict_step(self, inputs: TimeStep, state) -> AlgStep:
        """:math:`\\mu(s)` / the mode; rows explore with probability ``epsilon_greedy``."""
        output, _ = self._rollout_actor_network(inputs.observation)
        greedy = output if self._deterministic else dist_utils.get_mode(output)
        epsilon = self._epsilon_greedy
        if epsilon <= 0.0:  # (the OU state then stays as it is)
            return AlgStep(output=greedy, state=state)
        if self._deterministic:
            noise, noise_state = self._noise_process(state.noise)
            explored, state = output + noise, SarsaState(noise=noise_state)
        else:
            explored = dist_utils.sample_action_distribution(output)
        if epsilon >= 1.0:
            return AlgStep(output=explored, state=state)
        explore = torch.rand(greedy.shape[0], device=greedy.device) < epsilon
        action = torch.where(explore.reshape((-1,) + (1,) * (greedy.ndim - 1)), explored, greedy)
        return AlgStep(output=action, state=state)

    def rollout_step(self, inputs: TimeStep, state: SarsaState) -> AlgStep:
        """:math:`\\mu(s) + n` or a sample of :math:`\\pi(s)`; the state keeps :math:`s`."""
        output, _ = self._rollout_actor_network(inputs.observation)
        if self._deterministic:
            noise, noise_state = self._noise_process(state.noise)
            action = output + noise
        else:
            action, noise_state = dist_utils.sample_action_distribution(output), ()
        return AlgStep(
            output=action,
            state=SarsaState(prev_observation=inputs.observation, noise=noise_state),
        )

    # -- training ------------------------------------------------------------

    def train_step(self, inputs: TimeStep, state, rollout_info) -> AlgStep:
        """Not used: ``train_steps`` computes on whole ``[T, B]`` minibatches."""
        raise NotImplementedError(f"{self._name} trains with train_steps on [T, B] experience")

    def train_steps(self, experience: Experience) -> SarsaInfo:
        """Everything ``calc_loss`` needs from a ``[T, B]`` minibatch (module doc)."""
        ts = experience.time_step
        num_steps, batch_size = ts.step_type.shape[:2]
        rows = (num_steps, batch_size)
        stored = experience.state

        def _flat(x):
            return x.flatten(0, 1)

        def _previous(observation, stored_previous):  # s_{t-1}: row 0's from the state
            return _flat(torch.cat([stored_previous[:1].to(observation.dtype), observation[:-1]]))

        observation = nest.map_structure(_flat, ts.observation)
        prev_observation = nest.map_structure(_previous, ts.observation, stored.prev_observation)
        prev_action = _flat(ts.prev_action)
        output, _ = self._actor_network(observation)
        noise_state = _flat(stored.noise) if self._deterministic else ()
        action, _, log_pi = self._exploring_action(output, noise_state)

        critics, _ = self._critic_networks((prev_observation, prev_action))
        if critics.ndim == 1:
            critics = critics.unsqueeze(-1)
        with torch.no_grad():
            target_q, _ = self._target_critic_networks((observation, action.detach()))
            target_q = min_over_replicas(target_q)
        actor_loss = self._actor_loss(observation, action)
        neg_entropy = () if self._log_alpha is None else log_pi.reshape(rows)
        return SarsaInfo(
            reward=ts.reward,
            step_type=ts.step_type,
            discount=ts.discount,
            critics=critics.reshape(*rows, -1),
            target_critics=target_q.reshape(rows),
            actor_loss=actor_loss.reshape(rows),
            neg_entropy=neg_entropy,
        )

    def _actor_loss(self, observation, action) -> torch.Tensor:
        """ALF's ``0.5 ||sg(dqda + a) - a||^2`` ``[N]`` with ``dqda`` the gradient of
        :math:`\\min_i Q_i(s, a)` at ``action`` (the critics' weights get none)."""
        with frozen(self._critic_parameters):
            q, _ = self._critic_networks((observation, action))
        (dqda,) = torch.autograd.grad(min_over_replicas(q).sum(), action)
        if self._dqda_clipping:
            dqda = dqda.clamp(-self._dqda_clipping, self._dqda_clipping)
        loss = 0.5 * ((dqda + action).detach() - action) ** 2
        return loss.flatten(1).sum(1)

    def calc_loss(self, info: SarsaInfo) -> LossInfo:
        """Actor (+ entropy) loss ``[T, B]``, the critic loss as ``scalar_loss``, and the
        priority ``[B]`` (module doc)."""
        loss = info.actor_loss
        alpha_loss = ()
        reward = info.reward
        if self._log_alpha is not None:
            log_alpha = self._log_alpha.value
            alpha = log_alpha.detach().exp()
            loss = loss + alpha * info.neg_entropy
            if log_alpha.requires_grad:
                alpha_loss = -log_alpha * (info.neg_entropy.detach() + self._target_entropy)
                loss = loss + alpha_loss
            if self._use_entropy_reward:
                gamma = self._critic_loss.gamma
                reward = reward - gamma * info.discount * alpha * info.neg_entropy.detach()
        critic_loss = self._critic_losses(info, reward)  # [T, B], 0 at FIRST rows
        weights = self._critic_weights
        scalar_loss = (critic_loss if weights is None else critic_loss * weights).mean()
        priority = ()
        if self._calculate_priority:
            valid = (info.step_type != StepType.FIRST).to(critic_loss.dtype)
            priority = (critic_loss.sum(0) / valid.sum(0).clamp(min=1.0)).sqrt()
        extra = ()
        if alf.summary.should_record_summaries():
            actor_rows = info.step_type != StepType.LAST
            extra = SarsaLossInfo(
                actor=masked_mean(info.actor_loss, actor_rows),
                critic=critic_loss.mean(),
                alpha=() if isinstance(alpha_loss, tuple) else masked_mean(alpha_loss, actor_rows),
                neg_entropy=(
                    () if self._log_alpha is None else masked_mean(info.neg_entropy, actor_rows)
                ),
            )
            if self._log_alpha is not None:
                alf.summary.scalar(f"{self._name}/alpha", float(self._log_alpha.value.exp()))
        return LossInfo(loss=loss, scalar_loss=scalar_loss, priority=priority, extra=extra)

    def _critic_losses(self, info: SarsaInfo, reward) -> torch.Tensor:
        """The critic loss of each row ``[T, B]`` (summed over the critics; 0 at FIRST).

        Row ``t`` predicts :math:`Q(s_{t-1}, a_{t-1})` and row ``t``'s time step holds its
        reward, discount and next value, so the TD loss runs on the sequence shifted by
        one (ALF's arrangement): ``T + 1`` rows whose row ``t`` is the previous step of
        row ``t`` (its step type MID, LAST when row ``t`` is FIRST so nothing is
        trained across an episode seam) and whose row ``t + 1`` is row ``t``.
        """
        step_type = info.step_type
        first = step_type == StepType.FIRST
        previous_type = torch.where(first[:1], StepType.LAST, StepType.MID).to(step_type.dtype)
        td = self._critic_loss(
            pad_first(reward),
            torch.cat([previous_type, step_type]),
            pad_first(info.discount),
            pad_last(info.critics),
            pad_first(info.target_critics),
        )
        return td.loss[:-1] * (~first).to(td.loss.dtype)

    def update_from_experience(self, experience: Experience, valid_masks=None) -> LossInfo:
        """As ``RLAlgorithm``'s; the critic loss, not masked by LAST (module doc), is
        weighted here by ``valid_masks`` and the importance weights of prioritized replay."""
        weights = sample_weights(experience)
        if valid_masks is not None:
            valid = valid_masks.to(torch.float32)
            weights = valid if weights is None else weights * valid
        self._critic_weights = weights
        try:
            return super().update_from_experience(experience, valid_masks)
        finally:
            self._critic_weights = None

    def after_update(self, experience: Experience, train_info) -> None:
        """Move the target critics (and the smoothed actor) towards the trained ones."""
        self._target_updater()


def _check_args(action_spec, reward_spec, on_policy, checkpoint, name: str) -> None:
    if nest.is_nested(action_spec) or not action_spec.is_continuous:
        raise ValueError(f"{name} supports one continuous action spec, got {action_spec}")
    if reward_spec.shape != ():
        raise ValueError(f"{name} needs a scalar reward, got reward_spec {reward_spec}")
    if on_policy:
        raise ValueError(
            f"{name}: on_policy=True is not supported (ALF's own test calls on-policy SARSA "
            "very unstable and no ALF conf uses it); SARSA trains from a replay buffer "
            "with TrainerConfig.use_rollout_state=True and mini_batch_length=1, as ALF's "
            "sarsa_*.gin confs do"
        )
    if checkpoint is not None:
        raise ValueError(
            f"{name}.checkpoint (ALF's partial checkpoint loading) is not supported: start "
            "from another run's weights with TrainerConfig.init_from"
        )
