r"""``DqnAlgorithm``: deep Q-learning with n-step returns and double DQN.

Mnih et al. 2015, "Human-level control through deep reinforcement learning";
van Hasselt et al. 2016, "Deep Reinforcement Learning with Double Q-learning";
n-step returns as in Hessel et al. 2018, "Rainbow".

**Data.** Rollout is epsilon-greedy in :math:`Q_\theta` and stores raw experience
in the replay buffer (``OffPolicyAlgorithm``). Each update samples
``mini_batch_size`` sequences of ``mini_batch_length = n_step + 1`` steps,
time-major ``[T = n + 1, B]``. Row 0 is the transition being learned; rows
``1..n`` only supply rewards, discounts and the bootstrap value.

**Target** of row 0 (paper symbols; ``TimeStep`` convention: row ``k`` holds
:math:`r_k`, the reward of the action at ``k-1``, and the discount :math:`d_k`):

.. math::

    y = \sum_{k=1}^{m} \gamma^{k-1} r_k + \gamma^{m} d_m\, Q_{\theta'}(s_m, a^*_m),
    \qquad m = \min(n,\ \text{first } k \ge 1 \text{ with } s_k \text{ LAST}),

with :math:`a^*_m = \arg\max_a Q_\theta(s_m, a)` (double DQN: the online network
picks, the target network evaluates) or :math:`\arg\max_a Q_{\theta'}(s_m, a)`
(Nature DQN). Bootstrapping follows ``TimeStep.discount`` (docs/design.md, section 3): a
terminal LAST has :math:`d_m = 0`, so :math:`y` is the finite sum; a time-limit
LAST has :math:`d_m = 1`, so :math:`y` bootstraps from the value of the final
observation. Rows after a LAST belong to the next episode and are ignored. This
is ``TDLoss(td_lambda=1)`` (``value_ops.discounted_return``) over the sequence,
read at row 0. As in Rainbow, the n-step return is not corrected for the
exploratory actions taken at rows ``1..n-1``, so for ``n > 1`` it is biased
towards the behaviour policy's value (measured in the tests' 20-step chain with
30% exploration: about 8% low); ``n = 1`` is plain Q-learning.

**Loss** ``td_error_loss_fn(y, Q_θ(s_0, a_0))`` (Huber by default, Mnih et al.'s
error clipping) on row 0 only: ``update_from_experience`` masks rows ``1..n``
(and, as always, a LAST row 0, whose action the environment ignored), so the loss
is the mean over the ``B`` sampled transitions. ``LossInfo.priority`` is
:math:`|y - Q_\theta(s_0, a_0)|` ``[B]`` for prioritized replay (Schaul et al. 2016).
The target network :math:`\theta'` follows :math:`\theta` by
``TargetUpdater(tau, period)`` after every gradient step. Gradient clipping is set
on the optimizer spec (``Adam(lr=..., gradient_clipping=10)``).

**ALF's arguments.** ALF's ``DqnAlgorithm`` (a ``SacAlgorithm`` without actor there) is
configured with ``q_network_cls`` (the configuration's alias of ``q_network_ctor``),
``q_optimizer`` (the Q network's optimizer, here beside the default ``optimizer``),
``rollout_epsilon_greedy`` (a float or a scheduler such as
``LinearScheduler(progress_type="percent", schedule=[(0, 1.), (0.1, 0.1), (1., 0.1)])``)
and ``critic_loss_ctor``: ``critic_loss_ctor()`` builds the TD loss instead of the
internal ``TDLoss(gamma, td_error_loss_fn, td_lambda=1)``; its ``gamma`` is the discount
and its ``td_error_loss_fn`` the loss (``TDLoss``'s default: squared). Its target is read
at row 0 of the ``n + 1`` rows: with ``TDLoss(td_lambda=λ)`` it is the λ-return truncated
after ``n`` steps, :math:`y = r_1 + \gamma d_1((1-\lambda) Q'_1 + \lambda y_1)`,
:math:`y_{n-1} = r_n + \gamma d_n Q'_n` (λ = 1: the n-step target above). With
``n_step=1`` (``mini_batch_length=2``, as ALF's ``dqn_breakout_conf.py``) every λ gives
the one-step target, which is what ALF trains there. Differences from ALF's: ALF
trains every row of a longer sequence (row ``t`` toward its own truncated return) where
this trains row 0; and ALF bootstraps from the minimum of two target critics at their
argmax (``num_critic_replicas=2``), this from one target network (double DQN or Nature
DQN, ``double_dqn``). Because ALF's DQN is a ``SacAlgorithm``, the
``target_update_tau`` and ``target_update_period`` an ALF conf sets on ``SacAlgorithm``
(and not on ``DqnAlgorithm``) apply here too (``alf.configurable(alf_bases=...)``); ALF's
DQN passes its other ``SacAlgorithm`` arguments itself, so ``SacAlgorithm``'s values of
``q_network_cls``, ``critic_loss_ctor``, ``num_critic_replicas`` or ``critic_optimizer``
do not reach it, here or in ALF.

**Episodic returns** (ALF's lower-bounded targets). ``DqnRolloutInfo.discounted_return``
receives the replayed steps' returns :math:`G_t` (``ReplayBuffer(record_episodic_return=True,
gamma=γ)``: the discounted reward sum from ``t`` to the end of a finished episode, so a
lower bound of :math:`Q^*(s_t, a_t)` when the dynamics are deterministic); they reach the
critic loss, and with ``critic_loss_ctor=functools.partial(LowerBoundedTDLoss,
lb_target_q=w)`` row 0's target becomes :math:`(1 - w) y + w \max(y, G_0)` where
:math:`G_0` is known (``td_loss``). The buffer's ``gamma`` should be the loss's.

**Noisy networks** (``QNetwork(noisy=True)``: ``alf.layers.NoisyFC``; Fortunato et al.
2018, NoisyNet-DQN): new noise for the online network before every rollout step and
before every update (shared by row 0 and, for double DQN, the bootstrap argmax), and
independent noise for the target network before every update. Evaluation (eval mode) uses
the mean weights. Such a network explores by itself: use ``rollout_epsilon_greedy=0``.
**Dueling networks**: ``QNetwork(dueling=True)``; nothing changes here.

**Action masks** (``observation['action_mask']``, ``alf/utils/action_mask.py``): the Q
network reads the observation without the mask; the greedy action, the bootstrap action
:math:`a^*_m` (:math:`\arg\max` over the actions legal at :math:`s_m`, for double and
Nature DQN alike) and the epsilon-greedy random action (uniform over the legal ones) see
only the legal actions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

import alf
import alf.nest as nest
import alf.summary
from alf.algorithms.actor_critic_loss import element_wise_huber_loss
from alf.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf.algorithms.td_loss import TDLoss
from alf.algorithms.transitions import check_sampled_training, flat_rows
from alf.configuration.argtypes import Count, Discount, Probability, ScheduledFloat
from alf.data_structures import AlgStep, Experience, LossInfo, StepType, TimeStep
from alf.layers.noisy import noisy_layers
from alf.networks.q_networks import QNetwork
from alf.tensor_specs import TensorSpec
from alf.utils import action_mask
from alf.utils.schedulers import as_scheduler
from alf.utils.target_networks import TargetUpdater
from alf.utils.value_ops import pad_first

#: ALF's ``DqnAlgorithm`` is a ``SacAlgorithm``; its ``super().__init__`` leaves these
#: arguments to it, so values an ALF conf sets on ``SacAlgorithm`` reach ALF's DQN
_ALF_SAC = "alf.algorithms.sac_algorithm.SacAlgorithm"


class DqnRolloutInfo(NamedTuple):
    """What rollout keeps for training: the action taken ``[B]``; replayed experience
    gets the episodic returns ``[T, B]`` (or ``()``) from the learner."""

    action: object = ()
    discounted_return: object = ()


class DqnInfo(NamedTuple):
    """What ``train_steps`` gives ``calc_loss``, each ``[T, B]`` (``q_value`` and
    ``target_q_value`` of quantiles: ``[T, B, N]``).

    Attributes:
        reward, step_type, discount: from the time steps.
        q_value: :math:`Q_\\theta(s_0, a_0)` of the action taken, with gradient, on
            row 0 (the trained row); 0 on rows ``1..n``.
        target_q_value: :math:`Q_{\\theta'}(s_t, a^*_t)`, the bootstrap value of
            rows ``1..n``, without gradient; 0 on row 0.
        discounted_return: the replayed steps' episodic returns ``[T, B]``, or ``()``.
    """

    reward: object = ()
    step_type: object = ()
    discount: object = ()
    q_value: object = ()
    target_q_value: object = ()
    discounted_return: object = ()


class DqnLossInfo(NamedTuple):
    """Scalar diagnostics of row 0 (filled only when summaries are recorded)."""

    q_value: object = ()
    target: object = ()
    abs_td_error: object = ()


def expected_q(values: torch.Tensor) -> torch.Tensor:
    """:math:`Q(s, a)` ``[B, |A|]`` of Q values ``[B, |A|]`` or quantiles ``[B, |A|, N]``
    (their mean)."""
    return values if values.ndim == 2 else values.mean(-1)


def select_action(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """The values of column ``index`` ``[B]``: ``[B]`` of ``[B, |A|]``, ``[B, N]`` of
    ``[B, |A|, N]``."""
    rest = values.shape[2:]
    index = index.reshape(-1, 1, *([1] * len(rest))).expand(-1, 1, *rest)
    return values.gather(1, index).squeeze(1)


def first_row_mask(step_type: torch.Tensor) -> torch.Tensor:
    """``[T, B]`` bool mask selecting row 0: the only trained row of an n-step sequence."""
    mask = torch.zeros(step_type.shape, dtype=torch.bool, device=step_type.device)
    mask[0] = True
    return mask


def check_n_step_config(config, n_step: int, name: str) -> None:
    """Sampled sequences must be exactly ``n_step + 1`` long (see the module docstring)."""
    if n_step < 1:
        raise ValueError(f"{name}: n_step must be >= 1, got {n_step}")
    check_sampled_training(config, name)
    if config is None:
        return
    if config.mini_batch_length != n_step + 1:
        raise ValueError(
            f"{name} with n_step={n_step} trains on sequences of n_step + 1 steps: set "
            f"TrainerConfig.mini_batch_length={n_step + 1} (got {config.mini_batch_length})"
        )


def check_q_network(q_network, quantiles: bool, name: str) -> None:
    """A feed-forward network of quantiles (``quantiles``) or of one value per action."""
    if q_network.is_recurrent:
        raise ValueError(f"{name} supports feed-forward Q networks only")
    has_quantiles = getattr(q_network, "num_quantiles", None) is not None
    if quantiles and not has_quantiles:
        raise ValueError(f"{name} needs a quantile network: QNetwork(num_quantiles=N)")
    if has_quantiles and not quantiles:
        raise ValueError(f"{name}: a QNetwork with num_quantiles is QrdqnAlgorithm's network")


@alf.configurable(alf_bases={_ALF_SAC: ("target_update_tau", "target_update_period")})
class DqnAlgorithm(OffPolicyAlgorithm):
    """DQN / double DQN with n-step returns (see the module docstring).

    Args:
        observation_spec: spec of the (transformed) observation.
        action_spec: a scalar discrete ``BoundedTensorSpec``.
        reward_spec: spec of the reward (scalar).
        q_network_ctor: ``ctor(input_tensor_spec=, action_spec=)`` → a network
            returning Q values ``[B, num_actions]`` (``QNetwork``).
        env: the training environment.
        config: the ``TrainerConfig``; needs ``mini_batch_length = n_step + 1``
            and ``whole_replay_buffer_training=False``.
        gamma: discount factor :math:`\\gamma` (multiplies ``TimeStep.discount``); None:
            0.99, or with ``critic_loss_ctor`` that loss's (a different value is an error).
        n_step: number of rewards summed before bootstrapping.
        double_dqn: pick the bootstrap action with the online network and
            evaluate it with the target network (van Hasselt et al. 2016);
            False gives Nature DQN's :math:`\\max_a Q_{\\theta'}`.
        td_error_loss_fn: ``(target, prediction) -> loss`` elementwise (None: Huber;
            ``element_wise_squared_loss`` for the squared loss). Not with
            ``critic_loss_ctor`` (give it to that loss).
        critic_loss_ctor: ALF's argument: ``ctor()`` → the TD loss (e.g.
            ``functools.partial(TDLoss, td_lambda=0.95)``; module doc). None: the n-step
            ``TDLoss`` of ``gamma`` and ``td_error_loss_fn``.
        rollout_epsilon_greedy: probability of a uniformly random action during
            rollout: a float, a scheduler, or ``[(progress, eps), ...]`` for a
            piecewise-linear schedule over training progress (e.g.
            ``[(0, 1.0), (0.1, 0.05)]``, Stable-Baselines3's
            ``exploration_fraction=0.1, exploration_final_eps=0.05``).
        epsilon_greedy: probability of a random action in ``predict_step``
            (``config.epsilon_greedy`` when None, 0 without a config).
        random_initial_collect: take uniformly random actions until every env
            has ``config.initial_collect_steps`` steps in the replay buffer
            (Stable-Baselines3's ``learning_starts``).
        target_update_tau: Polyak factor of the target update (1: hard copy).
        target_update_period: update the target network every so many gradient
            steps.
        optimizer: the default optimizer spec (gradient clipping there).
        q_optimizer: ALF's argument: the optimizer spec of the Q network (``optimizer``
            then optimizes nothing).
        debug_summaries: extra summaries.
        name: name in summaries.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        q_network_ctor: Callable = QNetwork,
        env=None,
        config=None,
        gamma: Discount | None = None,
        n_step: Count = 1,
        double_dqn: bool = True,
        td_error_loss_fn: Callable | None = None,
        critic_loss_ctor: Callable | None = None,
        rollout_epsilon_greedy: ScheduledFloat = 0.1,
        epsilon_greedy: Probability | None = None,
        random_initial_collect: bool = True,
        target_update_tau: Probability = 0.05,
        target_update_period: Count = 10,
        optimizer=None,
        q_optimizer=None,
        debug_summaries: bool = False,
        name: str = "DqnAlgorithm",
    ):
        if reward_spec.shape != ():
            raise ValueError(f"{name} needs a scalar reward, got reward_spec {reward_spec}")
        check_n_step_config(config, n_step, name)
        network_spec, _ = action_mask.split_observation_spec(observation_spec, action_spec, name)
        q_network = q_network_ctor(input_tensor_spec=network_spec, action_spec=action_spec)
        check_q_network(q_network, self._quantiles, name)
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
        self._q_network = q_network
        self._target_q_network = q_network.copy(name="target_q_network")
        self._target_updater = TargetUpdater(
            [self._q_network], [self._target_q_network], target_update_tau, target_update_period
        )
        self._num_actions = q_network.num_actions
        self._n_step = n_step
        self._double_dqn = double_dqn
        self._td_loss = self._make_td_loss(gamma, td_error_loss_fn, critic_loss_ctor, n_step)
        self._rollout_epsilon = as_scheduler(rollout_epsilon_greedy)
        if epsilon_greedy is None:
            epsilon_greedy = 0.0 if config is None else config.epsilon_greedy
        self._predict_epsilon = epsilon_greedy
        self._random_initial_collect = random_initial_collect
        if q_optimizer is not None:
            self.add_optimizer(q_optimizer, [self._q_network])
        self._noisy_layers = noisy_layers(self._q_network)
        self._target_noisy_layers = noisy_layers(self._target_q_network)

    #: whether the Q network gives quantiles ``[B, |A|, N]`` (``QrdqnAlgorithm``)
    _quantiles = False

    def _make_td_loss(self, gamma, td_error_loss_fn, critic_loss_ctor, n_step: int):
        """The TD loss: ``critic_loss_ctor()``, else the n-step ``TDLoss`` (module doc)."""
        name = self._name
        if critic_loss_ctor is None:
            loss_fn = td_error_loss_fn or element_wise_huber_loss
            return TDLoss(
                gamma=0.99 if gamma is None else gamma, td_error_loss_fn=loss_fn, td_lambda=1.0
            )
        if td_error_loss_fn is not None:
            raise ValueError(
                f"{name}: td_error_loss_fn is given with critic_loss_ctor; give it to the loss"
            )
        loss = critic_loss_ctor()
        if gamma is not None and gamma != loss.gamma:
            raise ValueError(
                f"{name}: gamma={gamma} differs from the critic loss's gamma={loss.gamma}; "
                "set it on the loss (or leave gamma None)"
            )
        if n_step > 1 and getattr(loss, "td_lambda", None) == 0:
            raise ValueError(
                f"{name}: a one-step critic loss (td_lambda=0) ignores rows 2..n of n_step={n_step}"
            )
        return loss

    @property
    def q_network(self) -> QNetwork:
        return self._q_network

    @property
    def target_q_network(self) -> QNetwork:
        return self._target_q_network

    # -- acting ----------------------------------------------------------------

    def _greedy(self, inputs: TimeStep, network=None, check: bool = False):
        """``(values [B, |A|] (or quantiles), a* = argmax_a Q(s, a) [B] over the legal
        actions, bool mask or None)`` of ``network`` (the online one when None); ``check``
        (rollout): a non-LAST row without a legal action is an error."""
        observation, mask = action_mask.split_time_step(inputs, self._name if check else None)
        values = (self._q_network if network is None else network)(observation)[0]
        return values, action_mask.mask_logits(expected_q(values), mask).argmax(-1), mask

    def _epsilon_greedy_action(self, inputs: TimeStep, epsilon: float, check=False):
        """Greedy in :math:`Q_\\theta`, uniformly random (among the legal actions) with
        probability ``epsilon``; ``[B]``.

        The random draws are made whatever ``epsilon`` is, so the random stream
        (and hence a seeded run) does not depend on the schedule.
        """
        _, greedy, mask = self._greedy(inputs, check=check)
        batch_size = greedy.shape[0]
        if mask is None:
            random = torch.randint(0, self._num_actions, (batch_size,), device=greedy.device)
        else:
            random = action_mask.uniform_legal_action(mask)
        explore = torch.rand(batch_size, device=greedy.device) < epsilon
        return self._q_network.index_action(torch.where(explore, random, greedy))

    def _collecting_initial_steps(self) -> bool:
        return self._random_initial_collect and self.initial_collect_pending()

    def current_rollout_epsilon(self) -> float:
        """The rollout's epsilon now (1 during the random initial collection)."""
        if self._collecting_initial_steps():
            return 1.0
        return float(self._rollout_epsilon())

    def predict_step(self, inputs: TimeStep, state) -> AlgStep:
        """Greedy action ``[B]`` (random with probability ``epsilon_greedy``)."""
        if self._predict_epsilon > 0:
            action = self._epsilon_greedy_action(inputs, self._predict_epsilon)
        else:
            action = self._q_network.index_action(self._greedy(inputs)[1])
        return AlgStep(output=action, state=state)

    def rollout_step(self, inputs: TimeStep, state) -> AlgStep:
        """Epsilon-greedy action ``[B]`` with the scheduled ``rollout_epsilon_greedy`` (new
        noise first for a noisy network)."""
        for layer in self._noisy_layers:
            layer.reset_noise()
        action = self._epsilon_greedy_action(inputs, self.current_rollout_epsilon(), check=True)
        return AlgStep(output=action, state=state, info=DqnRolloutInfo(action=action))

    # -- training --------------------------------------------------------------

    def train_step(self, inputs: TimeStep, state, rollout_info) -> AlgStep:
        """Not used: row 0 of a sequence is trained and rows ``1..n`` only bootstrap it, so
        ``train_steps`` computes on whole ``[T, B]`` minibatches."""
        raise NotImplementedError(f"{self._name} trains with train_steps on [T, B] experience")

    @torch.no_grad()
    def _bootstrap_value(self, inputs: TimeStep) -> torch.Tensor:
        """:math:`Q_{\\theta'}(s, a^*)` ``[M]`` (quantiles ``[M, N]``) for time steps
        ``[M, ...]``, without gradient; :math:`a^*` is greedy in the mean over quantiles,
        among the legal actions."""
        target_values, best, _ = self._greedy(inputs, self._target_q_network)
        if self._double_dqn:
            best = self._greedy(inputs)[1]
        return select_action(target_values, best)

    def train_steps(self, experience: Experience) -> DqnInfo:
        """:math:`Q_\\theta(s_0, a_0)` with gradient (row 0) and the bootstrap values of
        rows ``1..n``, as ``[T, B]`` infos (zero-padded) for ``calc_loss``.

        Only what the loss needs is computed: the online network with gradient on
        row 0, the target network (and, for double DQN, the online network without
        gradient) on rows ``1..n``. A noisy network gets new noise first (module doc).
        Quantile networks give ``[T, B, N]`` infos.
        """
        for layer in self._noisy_layers + self._target_noisy_layers:
            layer.reset_noise()
        ts = experience.time_step
        rows = (ts.step_type.shape[0] - 1, ts.step_type.shape[1])
        observation, _ = action_mask.split_observation(ts.observation)
        q_values, _ = self._q_network(nest.map_structure(lambda x: x[0], observation))
        index = self._q_network.action_index(experience.rollout_info.action[0])
        q_value = select_action(q_values, index)
        next_steps = TimeStep(
            step_type=flat_rows(ts.step_type, 1, None),
            observation=flat_rows(ts.observation, 1, None),
        )
        target_q_value = self._bootstrap_value(next_steps)
        target_q_value = target_q_value.reshape(*rows, *target_q_value.shape[1:])
        return DqnInfo(
            reward=ts.reward,
            step_type=ts.step_type,
            discount=ts.discount,
            q_value=torch.cat([q_value.unsqueeze(0), q_value.new_zeros(target_q_value.shape)]),
            target_q_value=pad_first(target_q_value),
            discounted_return=experience.rollout_info.discounted_return,
        )

    def calc_loss(self, info: DqnInfo) -> LossInfo:
        """Loss ``[T, B]`` (only row 0 is kept by ``update_from_experience``), priority ``[B]``."""
        loss_info = self._td_loss(
            info.reward,
            info.step_type,
            info.discount,
            info.q_value,
            info.target_q_value,
            discounted_return=info.discounted_return,
        )
        td_error = loss_info.extra.td_error[0]
        extra = ()
        if alf.summary.should_record_summaries():
            valid = info.step_type[0] != StepType.LAST
            extra = DqnLossInfo(
                q_value=info.q_value[0][valid].detach().mean(),
                target=loss_info.extra.target[0][valid].mean(),
                abs_td_error=td_error[valid].abs().mean(),
            )
        return LossInfo(loss=loss_info.loss, extra=extra, priority=td_error.abs())

    def update_from_experience(self, experience: Experience, valid_masks=None, **kwargs):
        """Train on row 0 of each ``[n + 1, B]`` sequence (see the module docstring)."""
        mask = first_row_mask(experience.time_step.step_type)
        if valid_masks is not None:
            mask = mask & valid_masks.bool()
        return super().update_from_experience(experience, mask, **kwargs)

    def after_update(self, experience: Experience, train_info) -> None:
        self._target_updater()

    def after_train_iter(self, experience: Experience, train_info=None) -> None:
        if alf.summary.should_record_summaries():
            alf.summary.scalar("dqn/rollout_epsilon", self.current_rollout_epsilon())
