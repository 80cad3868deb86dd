r"""``CrossQAlgorithm``: SAC without target networks, with batch-renormalized networks.

Bhatt et al. 2024, "CrossQ: Batch Normalization in Deep RL for Greater Sample Efficiency
and Simplicity" (ICLR 2024, arXiv:1902.05605), as sb3-contrib's ``CrossQ`` (2.9.2)
implements it. CrossQ is ``SacAlgorithm`` (the losses of ``sac_loss.py``) with four
changes:

1. **No target critics.** The TD target bootstraps from the critics themselves.
2. **Batch (re)normalization** in the actor and the critics: ``alf.layers.BatchRenorm1d``
   on every linear layer's input (``fc_bn_after_activation``: the network's input and
   each hidden activation), each critic replica with its own statistics.
3. **One joint critic pass.** The critics evaluate the concatenated batch
   :math:`[(s_t, a_t); (s_{t+1}, a')]`, :math:`a' \sim \pi(\cdot|s_{t+1})`, in *one*
   forward pass in training mode, so the normalization statistics are those of the
   mixture of both halves (the paper's point: with separate passes the next half is out
   of the first half's distribution). The first half is :math:`Q_i(s_t, a_t)`, trained;
   the second half, detached, gives the target

   .. math:: V'(s_{t+1}) = \min_i Q_i(s_{t+1}, a') - \alpha \log\pi(a'|s_{t+1}).

4. **Delayed policy updates.** The actor and :math:`\alpha` are updated every
   ``policy_delay`` critic updates (sb3-contrib's name; TD3's ``actor_update_period``).
   On the other updates their losses are not computed, their parameters get no gradient,
   and their Adam states do not move.

**Normalization modes** are set for each pass, whatever the module's ``training`` flag,
as sb3-contrib does: rollout and prediction run the actor's norms in evaluation mode
(running statistics, not updated); :math:`a'` comes from the actor in evaluation mode;
the joint critic pass runs in training mode (it updates the critics' running
statistics); the actor update samples :math:`\tilde a_t` in training mode (it updates
the actor's statistics) and evaluates :math:`\min_i Q_i(s_t, \tilde a_t)` with the
critics in evaluation mode and their parameters frozen.

**Defaults** are sb3-contrib's: actor 256x256 and critics 1024x1024 with ReLU and
``BatchRenorm1d(momentum=0.01, eps=1e-3, warmup_steps=100_000)``, Adam with lr 1e-3
and betas (0.5, 0.999) for the actor and the critics (the α optimizer: lr 1e-3,
torch's betas), ``policy_delay=3``, uniformly random actions until
``initial_collect_steps`` (sb3's ``learning_starts``), target entropy :math:`-\dim A`,
α starting at 1.

**Differences from sb3-contrib.** The three losses are summed into one backward pass
and one step of each optimizer (as ``SacAlgorithm``), so the actor loss sees the
critics' weights before this update's critic step (sb3-contrib steps the critics
first); both see the running statistics the joint pass has just updated.
``BatchRenorm1d`` normalizes with the biased batch variance and puts
:math:`\epsilon` where Ioffe (2017) does (its module doc).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable

import torch
import torch.nn as nn

import alf
import alf.nest as nest
import alf.summary
from alf.algorithms.sac_algorithm import (
    SacAlgorithm,
    SacInfo,
    SquashedNormalActorNetwork,
    _sample_with_log_prob,
    sac_arguments,
)
from alf.algorithms.sac_loss import SacLossInfo
from alf.algorithms.td_loss import OneStepTDLoss
from alf.algorithms.transitions import flat_rows
from alf.configuration.argtypes import Count
from alf.data_structures import AlgStep, Experience, LossInfo, StepType, TimeStep
from alf.layers.norm import BatchRenorm1d
from alf.networks.critic_networks import CriticNetwork, min_over_replicas
from alf.optimizers import Adam
from alf.tensor_specs import TensorSpec
from alf.utils.torch_utils import frozen
from alf.utils.value_ops import pad_first, pad_last

#: sb3-contrib's CrossQ actor: 256x256 ReLU, ``BatchRenorm1d`` on the input and after
#: each hidden activation, a tanh-squashed Gaussian with state-dependent log-std in [-20, 2].
CrossQActorNetwork = functools.partial(
    SquashedNormalActorNetwork,
    fc_layer_params=(256, 256),
    use_fc_bn=True,
    fc_bn_ctor=BatchRenorm1d,
    fc_bn_after_activation=True,
)

#: sb3-contrib's CrossQ critic: 1024x1024 ReLU (the paper's is 2048 wide),
#: ``BatchRenorm1d`` on the (observation, action) input and after each hidden activation.
CrossQCriticNetwork = functools.partial(
    CriticNetwork,
    joint_fc_layer_params=(1024, 1024),
    use_fc_bn=True,
    fc_bn_ctor=BatchRenorm1d,
    fc_bn_after_activation=True,
)

_NORM_TYPES = (BatchRenorm1d, nn.modules.batchnorm._BatchNorm)


def batch_norms(module: nn.Module) -> tuple[nn.Module, ...]:
    """The batch normalizations in ``module`` (``BatchRenorm1d`` and torch's ``BatchNorm*``)."""
    return tuple(m for m in module.modules() if isinstance(m, _NORM_TYPES))


@contextlib.contextmanager
def norms_training(norms, mode: bool):
    """Within the block, the modules ``norms`` are in training mode ``mode``; restored after."""
    modes = [m.training for m in norms]
    for m in norms:
        m.training = mode
    try:
        yield
    finally:
        for m, flag in zip(norms, modes):
            m.training = flag


def _cat(x, y):
    return nest.map_structure(lambda a, b: torch.cat([a, b]), x, y)


@alf.configurable
class CrossQAlgorithm(SacAlgorithm):
    """CrossQ (module doc): continuous actions only.

    Args:
        observation_spec, action_spec, reward_spec, env, config, critic_loss_ctor,
            target_entropy, initial_log_alpha, use_entropy_reward, reward_weights,
            debug_summaries, name: as ``SacAlgorithm``'s.
        actor_network_ctor: ``ctor(input_tensor_spec=, action_spec=)`` → a
            tanh-squashed Gaussian policy (``CrossQActorNetwork``: sb3-contrib's).
        critic_network_ctor: ``ctor(input_tensor_spec=(obs_spec, action_spec),
            num_replicas=)`` → :math:`Q(s, a)` ``[B, R]`` (``CrossQCriticNetwork``).
        num_critic_replicas: number ``R`` of critics (the target and the actor use
            their minimum).
        policy_delay: update the actor and α every so many critic updates.
        random_initial_collect: act uniformly at random within the action bounds until
            every env has ``config.initial_collect_steps`` steps (sb3's ``learning_starts``).
        optimizer: default optimizer of parameters no other optimizer claims; when it is
            None, the actor, critic and α optimizers left None get sb3-contrib's
            (module doc).
        actor_optimizer, critic_optimizer, alpha_optimizer: the optimizers of the actor,
            the critics and :math:`\\log\\alpha`.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        actor_network_ctor: Callable = CrossQActorNetwork,
        critic_network_ctor: Callable = CrossQCriticNetwork,
        num_critic_replicas: Count = 2,
        env=None,
        config=None,
        critic_loss_ctor: Callable = OneStepTDLoss,
        target_entropy: float | Callable | None = None,
        initial_log_alpha: float = 0.0,
        use_entropy_reward: bool = True,
        policy_delay: Count = 3,
        random_initial_collect: bool = True,
        optimizer=None,
        actor_optimizer=None,
        critic_optimizer=None,
        alpha_optimizer=None,
        reward_weights=None,
        debug_summaries: bool = False,
        name: str = "CrossQAlgorithm",
    ):
        if action_spec.is_discrete:
            raise ValueError(f"{name} supports continuous actions only, got {action_spec}")
        if policy_delay < 1:
            raise ValueError(f"{name}: policy_delay must be >= 1, got {policy_delay}")
        if optimizer is None:  # sb3-contrib's optimizers
            actor_optimizer = actor_optimizer or Adam(lr=1e-3, betas=(0.5, 0.999))
            critic_optimizer = critic_optimizer or Adam(lr=1e-3, betas=(0.5, 0.999))
            alpha_optimizer = alpha_optimizer or Adam(lr=1e-3)
        super().__init__(**sac_arguments(locals()))
        unsupported = {  # e.g. set on SacAlgorithm by a conf
            "reproduce_locomotion": self._reproduce_locomotion,
            "parameter_reset_period": self._periodic_reset is not None,
        }
        for arg, set_ in unsupported.items():
            if set_:
                raise ValueError(f"{name}: SacAlgorithm.{arg} is not supported by CrossQ")
        # No target critics: drop SAC's (and its Polyak updater).
        del self._target_critic_networks
        self._target_updater = None
        self._policy_delay = policy_delay
        self._actor_norms = batch_norms(self._actor_network)
        self._critic_norms = batch_norms(self._critic_networks)
        # Counts gradient steps; checkpointed so the actor-update phase survives a resume.
        self.register_buffer("_num_updates", torch.zeros((), dtype=torch.int64))
        self._num_updates_host = 0

    @property
    def target_critic_networks(self):
        """None: CrossQ has no target critics."""
        return None

    @property
    def policy_delay(self) -> int:
        return self._policy_delay

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._num_updates_host = int(self._num_updates)

    # -- acting --------------------------------------------------------------

    def predict_step(self, inputs: TimeStep, state) -> AlgStep:
        with norms_training(self._actor_norms, False):
            return super().predict_step(inputs, state)

    def rollout_step(self, inputs: TimeStep, state) -> AlgStep:
        with norms_training(self._actor_norms, False):
            return super().rollout_step(inputs, state)

    # -- training ------------------------------------------------------------

    def actor_update_due(self) -> bool:
        """Whether this update trains the actor and α: every ``policy_delay``-th, counting
        from 1 (sb3-contrib's ``_n_updates % policy_delay == 0``)."""
        return (self._num_updates_host + 1) % self._policy_delay == 0

    def train_steps(self, experience: Experience) -> SacInfo:
        """What the losses need from a ``[T, B]`` minibatch (module doc); ``neg_entropy``
        and ``actor_q`` are ``()`` on updates without an actor step."""
        ts = experience.time_step
        num_steps, batch_size = ts.step_type.shape[:2]
        steps = (num_steps - 1, batch_size)
        alpha = self._log_alpha.value.detach().exp()
        observation = flat_rows(ts.observation, None, -1)
        next_observation = flat_rows(ts.observation, 1, None)
        action = flat_rows(experience.rollout_info.action, None, -1)
        with torch.no_grad(), norms_training(self._actor_norms, False):
            next_dist, _ = self._actor_network(next_observation)
            next_action, next_log_pi = _sample_with_log_prob(next_dist)
        with norms_training(self._critic_norms, True):
            q, _ = self._critic_networks(
                (_cat(observation, next_observation), torch.cat([action, next_action]))
            )
        num = action.shape[0]
        critic_q, target_v = q[:num], min_over_replicas(q[num:].detach())
        if self._use_entropy_reward:
            target_v = target_v - alpha * next_log_pi
        neg_entropy = actor_q = ()
        if self.actor_update_due():
            with norms_training(self._actor_norms, True):
                dist, _ = self._actor_network(observation)
            new_action, log_pi = _sample_with_log_prob(dist)
            with frozen(self._critic_parameters), norms_training(self._critic_norms, False):
                q_new, _ = self._critic_networks((observation, new_action))
            neg_entropy = log_pi.reshape(steps)
            actor_q = min_over_replicas(q_new).reshape(steps)
        return SacInfo(
            reward=self._scalar_reward(ts.reward),
            step_type=ts.step_type,
            discount=ts.discount,
            critic_q=pad_last(critic_q.reshape(*steps, -1)),
            target_v=pad_first(target_v.reshape(steps)),
            neg_entropy=neg_entropy,
            actor_q=actor_q,
            discounted_return=experience.rollout_info.discounted_return,
        )

    def calc_loss(self, info: SacInfo) -> LossInfo:
        """SAC's losses (``sac_loss``) on actor updates, the critics' TD loss alone on the
        others (so the actor and :math:`\\log\\alpha` get no gradient)."""
        if isinstance(info.actor_q, torch.Tensor):
            return super().calc_loss(info)
        td = self._critic_loss(
            info.reward,
            info.step_type,
            info.discount,
            info.critic_q,
            info.target_v,
            discounted_return=info.discounted_return,
        )
        priority = ()
        if self._compute_priority:
            priority = td.extra.td_error[:-1].abs().mean(-1).mean(0)
        extra = ()
        if alf.summary.should_record_summaries():
            valid = info.step_type[:-1] != StepType.LAST
            extra = SacLossInfo(
                critic_loss=td.loss[:-1][valid].mean(),
                alpha=self._log_alpha.value.detach().exp(),
                q=info.critic_q[:-1][valid].mean(),
            )
        return LossInfo(loss=td.loss, extra=extra, priority=priority)

    def after_update(self, experience: Experience, train_info) -> None:
        """Count the update (no target critics to move)."""
        self._num_updates += 1
        self._num_updates_host += 1
