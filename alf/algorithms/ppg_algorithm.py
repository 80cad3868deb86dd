r"""``PPGAlgorithm``: Phasic Policy Gradient (Cobbe et al. 2021).

PPG is PPO with the policy and the value function in separate networks
(``DisjointPolicyValueNetwork``: a policy network :math:`\theta` with an auxiliary value
head, a value network :math:`\phi`) and two alternating phases:

* **policy phase**, every iteration: PPO's (``PPOAlgorithm``: the same ``EpochLearner``,
  GAE advantages, ``PPOLoss``, ``target_kl``). The policy loss trains :math:`\theta`, the
  value loss :math:`\phi`; the auxiliary head is not used.
* **auxiliary phase**, after every ``aux_options.interval`` (:math:`N_\pi`) iterations:
  ``aux_options.num_updates_per_train_iter`` (:math:`E_{aux}`) epochs of minibatches over
  all the states of those iterations, minimizing ``PPGAuxPhaseLoss``: the value targets
  :math:`\hat V^{targ}` distilled into the auxiliary head under a KL penalty
  :math:`\beta_{clone} KL(\pi_{\theta_{old}} \| \pi_\theta)` that keeps the policy
  where it was, and the value network fitted to the same targets again. Minibatches are
  ``aux_options.mini_batch_size`` sequences of ``aux_options.mini_batch_length`` steps
  (None: whole unrolls), a new permutation each epoch.

What the auxiliary phase keeps (on the training device): per iteration, the transformed
observations of its ``T x B`` steps, their step types and their value targets
:math:`\hat V^{targ}` (``PPGAuxPhaseLoss.value_targets`` of the rollout values, computed in
``preprocess_experience`` with the unroll's bootstrap row). :math:`\pi_{\theta_{old}}` is
the policy when the phase begins (the paper's Algorithm 1), evaluated on all kept states
then, not the older policies that collected them. The kept data is dropped after the
phase. It is not checkpointed: a resumed run keeps nothing from before the resume, so its
first auxiliary phase comes ``interval`` iterations after the resume.

The auxiliary phase has its own optimizer (``aux_optimizer``, with its own moments) over
all the network's parameters; the policy phase's is ``policy_optimizer``. Both are in
the checkpoint. ``aux_options.enabled=False`` leaves plain PPO on this network.

The network must be feed-forward (the auxiliary phase trains on single steps).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch

import alf
import alf.nest as nest
import alf.summary
from alf.algorithms.algorithm import Algorithm
from alf.algorithms.ppg_aux_phase_loss import PPGAuxInfo, PPGAuxPhaseLoss, PPGAuxPhaseLossInfo
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.data_structures import Experience, StepType, TimeStep
from alf.learners.learner import shuffled_mini_batches, split_sequences
from alf.networks.disjoint_policy_value_network import DisjointPolicyValueNetwork
from alf.networks.encoding_networks import EncodingNetwork
from alf.tensor_specs import TensorSpec
from alf.utils import action_mask, dist_utils

_AUX_OPTIMIZER_KEY = "_aux_optimizers"


class PPGAuxOptions(NamedTuple):
    """The auxiliary phase's schedule (ALF's fields).

    Attributes:
        enabled: False: no auxiliary phase (PPO on the disjoint network).
        interval: :math:`N_\\pi`, policy-phase iterations per auxiliary phase.
        mini_batch_length: steps per sequence of a minibatch (None: the unroll length).
        mini_batch_size: sequences per minibatch (None: all of them).
        num_updates_per_train_iter: :math:`E_{aux}`, epochs per auxiliary phase.
    """

    enabled: bool = True
    interval: int = 32
    mini_batch_length: int | None = None
    mini_batch_size: int | None = 8
    num_updates_per_train_iter: int = 6


_DEFAULT_AUX_OPTIONS = PPGAuxOptions()


class PPGAuxData(NamedTuple):
    """What an auxiliary phase trains on, per step (``[T, B]``)."""

    returns: object = ()
    old_policy: object = ()  # π_θold's parameters (``dist_utils.distributions_to_params``)


@alf.configurable
class PPGAlgorithm(PPOAlgorithm):
    """Phasic Policy Gradient (module doc).

    Args:
        observation_spec: spec of the (transformed) observation.
        action_spec: spec of the action.
        reward_spec: spec of the reward (scalar).
        env: the training environment.
        config: the ``TrainerConfig``.
        aux_options: the auxiliary phase's ``PPGAuxOptions``.
        encoding_network_ctor: ``ctor(input_tensor_spec=)`` of the encoder(s) of the
            ``DisjointPolicyValueNetwork`` (one shared, or one per network; configure
            ``DisjointPolicyValueNetwork.is_sharing_encoder``).
        policy_optimizer: the optimizer of the policy phase (all parameters).
        aux_optimizer: the optimizer of the auxiliary phase (all parameters; its own
            moments); None: another optimizer like ``policy_optimizer``.
        loss: the policy phase's loss (``loss_class()`` when None).
        loss_class: ctor of the policy phase's loss.
        aux_loss: the auxiliary phase's loss (``PPGAuxPhaseLoss()`` when None).
        target_kl: PPO's early stop of the policy phase's epochs (``PPOAlgorithm``).
        epsilon_greedy: probability of sampling instead of the mode in ``predict_step``
            (``config.epsilon_greedy`` when None).
        debug_summaries: extra summaries.
        name: name in summaries.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        env=None,
        config=None,
        aux_options: PPGAuxOptions = _DEFAULT_AUX_OPTIONS,
        encoding_network_ctor: Callable = EncodingNetwork,
        policy_optimizer=None,
        aux_optimizer=None,
        loss=None,
        loss_class: Callable = PPOLoss,
        aux_loss: PPGAuxPhaseLoss | None = None,
        target_kl: float | None = None,
        epsilon_greedy: float | None = None,
        debug_summaries: bool = False,
        name: str = "PPGAlgorithm",
    ):
        _check_aux_options(aux_options, config, name)
        # the networks read the observation without its action mask (alf/utils/action_mask.py)
        network_spec, _ = action_mask.split_observation_spec(observation_spec, action_spec, name)
        network = DisjointPolicyValueNetwork(
            observation_spec=network_spec,
            action_spec=action_spec,
            encoding_network_ctor=encoding_network_ctor,
        )
        super().__init__(
            observation_spec=observation_spec,
            action_spec=action_spec,
            reward_spec=reward_spec,
            actor_network_ctor=lambda **_: network.policy_network,
            value_network_ctor=lambda **_: network.value_network,
            encoding_network_ctor=None,  # (the network's own, in ``_encode``)
            actor_optimizer=None,
            value_optimizer=None,
            env=env,
            config=config,
            loss=loss,
            loss_class=loss_class,
            optimizer=policy_optimizer,
            epsilon_greedy=epsilon_greedy,
            target_kl=target_kl,
            debug_summaries=debug_summaries,
            name=name,
        )
        # the actor and value networks are views of ``network``'s modules: the network is
        # their one registered owner (one state-dict entry per parameter)
        for attr in ("_actor_network", "_value_network"):
            object.__setattr__(self, attr, self._modules.pop(attr))
        self._network = network
        self._aux_options = aux_options
        self._aux_loss = aux_loss if aux_loss is not None else PPGAuxPhaseLoss()
        self._aux_updater = None
        if aux_options.enabled:
            if aux_optimizer is None and policy_optimizer is None:
                raise ValueError(f"{name}.aux_optimizer: give aux_optimizer or policy_optimizer")
            updater = Algorithm(optimizer=aux_optimizer or policy_optimizer, name=f"{name}.aux")
            updater.network = network
            updater.set_mixed_precision(self._mixed_precision)
            # not a sub-algorithm: its optimizer must not take the policy phase's parameters
            object.__setattr__(self, "_aux_updater", updater)
        self._aux_buffer: list[Experience] = []
        self._pending_aux: Experience | None = None
        self._old_policy_spec = None
        self.num_aux_phases = 0
        self.num_aux_updates = 0

    @property
    def network(self) -> DisjointPolicyValueNetwork:
        return self._network

    @property
    def aux_options(self) -> PPGAuxOptions:
        return self._aux_options

    def _encode(self, observation):
        """With a shared encoder, the heads read its output (encoded once per step)."""
        return self._network.encode(observation)

    def set_mixed_precision(self, mixed_precision) -> None:
        super().set_mixed_precision(mixed_precision)
        updater = self.__dict__.get("_aux_updater")  # (called before __init__ sets it too)
        if updater is not None:
            updater.set_mixed_precision(mixed_precision)

    # -- the policy phase keeps what the auxiliary phase needs ---------------

    def preprocess_experience(self, experience: Experience) -> Experience:
        """PPO's advantages and returns; and, for the auxiliary phase, this unroll's
        states and value targets (``[T + 1, B]`` in, the ``T`` steps kept)."""
        experience = super().preprocess_experience(experience)
        if self._aux_updater is not None:
            ts, info = experience.time_step, experience.rollout_info
            returns = self._aux_loss.value_targets(ts.reward, info.value, ts.step_type, ts.discount)
            self._pending_aux = Experience(
                time_step=TimeStep(
                    step_type=ts.step_type[:-1],
                    observation=nest.map_structure(lambda x: x[:-1], ts.observation),
                ),
                rollout_info=PPGAuxData(returns=returns),
            )
        return experience

    def after_train_iter(self, experience, train_info=None) -> None:
        """PPO's summaries; then, every ``aux_options.interval`` iterations, the auxiliary
        phase on the kept unrolls."""
        super().after_train_iter(experience, train_info)
        if self._pending_aux is None:
            return
        self._aux_buffer.append(self._pending_aux)
        self._pending_aux = None
        if len(self._aux_buffer) >= self._aux_options.interval:
            self._aux_phase()

    # -- the auxiliary phase -------------------------------------------------

    def _aux_phase(self) -> None:
        """``E_aux`` epochs of minibatches over the kept unrolls (concatenated along the
        batch), π_θold evaluated on them first; then the unrolls are dropped."""
        chunks, self._aux_buffer = self._aux_buffer, []
        with torch.no_grad():
            chunks = [self._with_old_policy(c) for c in chunks]
        data = nest.map_structure(lambda *xs: torch.cat(xs, dim=1), *chunks)
        opts = self._aux_options
        sequences = split_sequences(data, opts.mini_batch_length)
        totals, count = 0.0, 0
        for _ in range(opts.num_updates_per_train_iter):
            for mini_batch in shuffled_mini_batches(sequences, opts.mini_batch_size):
                totals = totals + self._aux_update(mini_batch)
                count += 1
        self.num_aux_phases += 1
        self.num_aux_updates += count
        if alf.summary.should_record_summaries():
            alf.summary.scalar("ppg_aux/num_updates", count)
            for field, total in zip(PPGAuxPhaseLossInfo._fields, totals.tolist()):
                alf.summary.scalar(f"ppg_aux/{field}", total / count)

    def _with_old_policy(self, chunk: Experience) -> Experience:
        """``chunk`` with π_θ's distribution parameters on its states (``[T, B, ...]``)."""
        num_steps, batch_size = chunk.time_step.step_type.shape[:2]
        observation = nest.map_structure(lambda x: x.flatten(0, 1), chunk.time_step.observation)
        observation, mask = action_mask.split_observation(observation)
        dist, _ = self._network.policy_network(observation)
        dist = action_mask.mask_distribution(dist, action_mask.legal_mask(mask))
        self._old_policy_spec = dist_utils.extract_spec(dist, from_dim=1)
        params = nest.map_structure(
            lambda x: x.unflatten(0, (num_steps, batch_size)),
            dist_utils.distributions_to_params(dist),
        )
        return chunk._replace(rollout_info=chunk.rollout_info._replace(old_policy=params))

    def _aux_update(self, mini_batch: Experience) -> torch.Tensor:
        """One gradient step of ``aux_optimizer`` on ``mini_batch`` ``[L, b]`` (LAST steps
        masked out); returns the means of the loss terms ``[3]`` (on the device)."""
        flat = nest.map_structure(lambda x: x.flatten(0, 1), mini_batch)
        valid = flat.time_step.step_type != StepType.LAST
        amp = self._mixed_precision
        with torch.enable_grad():
            if amp is None:
                _, loss_info = self._aux_loss_of(flat)
            else:
                _, loss_info = amp.forward(self._aux_loss_of, flat)
            self._aux_updater.update_with_gradient(loss_info, valid)
        terms = torch.stack([x.detach() for x in loss_info.extra])
        return (terms * valid).sum(1) / valid.sum().clamp(min=1)

    def _aux_loss_of(self, flat: Experience):
        observation, mask = action_mask.split_observation(flat.time_step.observation)
        (dist, value, aux), _ = self._network(observation, require_aux=True)
        dist = action_mask.mask_distribution(dist, action_mask.legal_mask(mask))
        old = dist_utils.params_to_distributions(
            flat.rollout_info.old_policy, self._old_policy_spec
        )
        info = PPGAuxInfo(
            value=value,
            aux=aux,
            returns=flat.rollout_info.returns,
            action_distribution=dist,
            old_action_distribution=old,
        )
        return (), self._aux_loss(info)

    # -- checkpointing: the auxiliary optimizer too ---------------------------

    def state_dict(self, *args, **kwargs):
        """``Algorithm``'s state plus the auxiliary optimizer's, under
        ``'_aux_optimizers.<i>'``."""
        state = super().state_dict(*args, **kwargs)
        if self._aux_updater is not None and not args and not kwargs.get("prefix"):
            for i, (_, optimizer, _) in enumerate(self._aux_updater.optimizers()):
                state[f"{_AUX_OPTIMIZER_KEY}.{i}"] = optimizer.state_dict()
        return state

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        state_dict = dict(state_dict)
        prefix = _AUX_OPTIMIZER_KEY + "."
        aux_states = {k: state_dict.pop(k) for k in list(state_dict) if k.startswith(prefix)}
        result = super().load_state_dict(state_dict, strict=strict, assign=assign)
        if self._aux_updater is not None:
            for i, (_, optimizer, _) in enumerate(self._aux_updater.optimizers()):
                if f"{prefix}{i}" in aux_states:
                    optimizer.load_state_dict(aux_states[f"{prefix}{i}"])
        return result


def _check_aux_options(options, config, name: str) -> None:
    """A one-line ``ValueError`` naming the bad field of ``aux_options``."""
    if not isinstance(options, PPGAuxOptions):
        raise ValueError(f"{name}.aux_options must be a PPGAuxOptions, got {options!r}")
    if not options.enabled:
        return
    positive = {
        "interval": options.interval,
        "num_updates_per_train_iter": options.num_updates_per_train_iter,
        "mini_batch_size": options.mini_batch_size,
        "mini_batch_length": options.mini_batch_length,
    }
    for field, value in positive.items():
        optional = field.startswith("mini_batch")
        if (value is None and optional) or (isinstance(value, int) and value >= 1):
            continue
        raise ValueError(f"{name}.aux_options.{field} must be an int >= 1, got {value!r}")
    length = options.mini_batch_length
    unroll = None if config is None else config.unroll_length
    if length is not None and unroll is not None and math.gcd(length, unroll) != length:
        raise ValueError(
            f"{name}.aux_options.mini_batch_length ({length}) must divide "
            f"TrainerConfig.unroll_length ({unroll})"
        )
