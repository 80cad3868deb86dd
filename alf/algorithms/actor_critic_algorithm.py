"""``ActorCriticAlgorithm``: an actor network and a value network trained on-policy (A2C)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

import alf
import alf.nest as nest
from alf.algorithms.actor_critic_loss import ActorCriticLoss
from alf.algorithms.mirror_loss import check_mirror_setup, mirror_info
from alf.algorithms.on_policy_algorithm import OnPolicyAlgorithm
from alf.configuration.argtypes import Probability
from alf.data_structures import AlgStep, StepType, TimeStep
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.encoder_head import EncoderHeadNetwork
from alf.networks.value_networks import ValueNetwork
from alf.tensor_specs import TensorSpec
from alf.utils import action_mask, dist_utils


class ActorCriticState(NamedTuple):
    """Recurrent states of the actor and the value network (``()`` if feed-forward)."""

    actor: object = ()
    value: object = ()


class ActorCriticRolloutInfo(NamedTuple):
    """What rollout keeps for training, all ``[B, ...]`` tensors.

    ``advantages`` and ``returns`` are filled by preprocessing (PPO).
    """

    action: object = ()
    log_prob: object = ()
    value: object = ()
    advantages: object = ()
    returns: object = ()


class ActorCriticInfo(NamedTuple):
    """What ``train_step`` gives ``calc_loss``, all ``[B]`` (stacked to ``[T, B]``)."""

    step_type: object = ()
    reward: object = ()
    discount: object = ()
    log_prob: object = ()
    entropy: object = ()
    value: object = ()
    rollout_log_prob: object = ()
    rollout_value: object = ()
    advantages: object = ()
    returns: object = ()
    mirror: object = ()  # MirrorInfo when the loss has a mirror (mirror_loss.py), else ()
    # predict_step's info: the policy's distribution (e.g. for ``alf.summary.render``)
    action_distribution: object = ()


@alf.configurable
class ActorCriticAlgorithm(OnPolicyAlgorithm):
    """Actor-critic: a policy network and a state-value network.

    **Shared encoder** (``encoding_network_ctor``): by default the actor and the value
    network each read the observation through layers of their own. With
    ``encoding_network_ctor``, one encoder ``encoding_network_ctor(input_tensor_spec=
    observation_spec)`` (e.g. an ``EncodingNetwork`` with ``conv_layer_params`` and
    ``fc_layer_params``: Stable-Baselines3's ``CnnPolicy``) encodes the observation once
    per step, and ``actor_network_ctor`` / ``value_network_ctor`` build heads on its
    ``output_spec`` (e.g. an ``ActorDistributionNetwork`` and a ``ValueNetwork`` without
    hidden layers: linear heads). The encoder is trained by the sum of all the loss terms
    (policy, value, entropy), as in SB3. ``actor_network`` and ``value_network`` are then
    ``EncoderHeadNetwork``s (encoder then head: the whole policy and value function, e.g.
    for ``TracAlgorithm``, whose trust-region step then also scales the encoder's step).
    ``actor_optimizer`` / ``value_optimizer`` then optimize the heads only; the encoder
    is optimized by ``optimizer``. The encoder must be feed-forward. The mirror loss
    goes through the encoder (the mirrored observation is encoded too).

    **Action masks** (``observation['action_mask']``, ``alf/utils/action_mask.py``): the
    networks (and the shared encoder) are built on, and read, the observation without the
    mask; π(·|s) is restricted to the legal actions in every step, so the sampled and the
    evaluated actions, log π (PPO's importance ratio and its approximate KL) and the
    entropy are those of the distribution over the legal actions.

    Args:
        observation_spec: spec of the (transformed) observation.
        action_spec: spec of the action.
        reward_spec: spec of the reward (scalar).
        actor_network_ctor: ``ctor(input_tensor_spec=, action_spec=)`` → network
            returning an action distribution.
        value_network_ctor: ``ctor(input_tensor_spec=)`` → network returning ``[B]``.
        encoding_network_ctor: ``ctor(input_tensor_spec=)`` → a feed-forward network
            whose output both heads read (see above); None: no shared encoder.
        env: the training environment.
        config: the ``TrainerConfig``.
        loss: the loss object (``loss_class()`` when None).
        loss_class: ctor of the loss.
        optimizer: default optimizer of all parameters.
        actor_optimizer: optimizer of the actor network only (separate lr).
        value_optimizer: optimizer of the value network only.
        epsilon_greedy: probability of sampling instead of the mode in
            ``predict_step`` (``config.epsilon_greedy`` when None).
        debug_summaries: extra summaries.
        name: name in summaries.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        actor_network_ctor: Callable = ActorDistributionNetwork,
        value_network_ctor: Callable = ValueNetwork,
        encoding_network_ctor: Callable | None = None,
        env=None,
        config=None,
        loss=None,
        loss_class: Callable = ActorCriticLoss,
        optimizer=None,
        actor_optimizer=None,
        value_optimizer=None,
        epsilon_greedy: Probability | None = None,
        debug_summaries: bool = False,
        name: str = "ActorCriticAlgorithm",
    ):
        if reward_spec.shape != ():
            raise ValueError(f"{name} needs a scalar reward, got reward_spec {reward_spec}")
        head_optimizers = actor_optimizer is not None or value_optimizer is not None
        if encoding_network_ctor is not None and optimizer is None and head_optimizers:
            raise ValueError(
                f"{name}.encoding_network_ctor: actor_optimizer/value_optimizer optimize "
                "the heads only; give optimizer too, for the shared encoder"
            )
        ctors = (actor_network_ctor, value_network_ctor, encoding_network_ctor)
        # the networks read the observation without its action mask (alf/utils/action_mask.py)
        network_spec, _ = action_mask.split_observation_spec(observation_spec, action_spec, name)
        encoder, actor_network, value_network = _build_networks(
            network_spec, action_spec, ctors, name
        )
        state_spec = ActorCriticState(
            actor=actor_network.state_spec, value=value_network.state_spec
        )
        super().__init__(
            observation_spec=observation_spec,
            action_spec=action_spec,
            reward_spec=reward_spec,
            train_state_spec=state_spec,
            predict_state_spec=ActorCriticState(actor=actor_network.state_spec),
            env=env,
            config=config,
            optimizer=optimizer,
            debug_summaries=debug_summaries,
            name=name,
        )
        self._encoding_network = encoder
        if encoder is None:
            self._actor_network = actor_network
            self._value_network = value_network
        else:
            # the heads are the registered modules (one state-dict entry per parameter);
            # the whole networks share them and are kept aside, for readers from outside
            self._actor_head = actor_network.head
            self._value_head = value_network.head
            object.__setattr__(self, "_actor_network", actor_network)
            object.__setattr__(self, "_value_network", value_network)
        # what predict/rollout/train steps run on the encoding (the whole networks if none)
        self._heads = (_head(actor_network), _head(value_network))
        if actor_optimizer is not None:
            self.add_optimizer(actor_optimizer, [self._heads[0]])
        if value_optimizer is not None:
            self.add_optimizer(value_optimizer, [self._heads[1]])
        self._loss = loss if loss is not None else loss_class(debug_summaries=debug_summaries)
        self._mirror = getattr(self._loss, "mirror", None)
        check_mirror_setup(self._mirror, network_spec, action_spec, actor_network, name)
        if epsilon_greedy is None:
            epsilon_greedy = 0.0 if config is None else config.epsilon_greedy
        self._epsilon_greedy = epsilon_greedy
        self._entropy_target = None

    def set_entropy_target(self, entropy_target) -> None:
        """Add the bonus of an ``EntropyTargetAlgorithm`` (ALF's
        ``Agent(enforce_entropy_target=True)``) to the loss: ``-alpha * H`` per step, alpha
        adjusted after each update to keep the entropy near its target."""
        self._entropy_target = entropy_target

    @property
    def actor_network(self):
        return self._actor_network

    @property
    def value_network(self):
        return self._value_network

    @property
    def encoding_network(self):
        """The shared encoder (None without ``encoding_network_ctor``)."""
        return self._encoding_network

    def _encode(self, observation):
        """The heads' input: the shared encoder's output, else the observation itself."""
        if self._encoding_network is None:
            return observation
        return self._encoding_network(observation)[0]

    def _policy(self, inputs: TimeStep, state, check: bool):
        """``(π(·|s), actor state, observation without the mask, encoding)``; with an action
        mask π is over the legal actions only (``alf/utils/action_mask.py``); ``check``
        (rollout): a row of a non-LAST step without a legal action is then an error."""
        observation, mask = action_mask.split_time_step(inputs, self._name if check else None)
        encoding = self._encode(observation)
        dist, actor_state = self._heads[0](encoding, state.actor)
        dist = action_mask.mask_distribution(dist, mask)
        return dist, actor_state, observation, encoding

    @property
    def loss(self):
        return self._loss

    def predict_step(self, inputs: TimeStep, state) -> AlgStep:
        """The mode of the policy (a sample with probability ``epsilon_greedy``), legal
        actions only if the observation has an action mask."""
        dist, actor_state, _, _ = self._policy(inputs, state, check=False)
        action = dist_utils.get_mode(dist)
        if self._epsilon_greedy > 0:
            sample = dist_utils.sample_action_distribution(dist)
            batch_size = nest.get_nest_batch_size(inputs.step_type)
            explore = torch.rand(batch_size, device=inputs.step_type.device) < self._epsilon_greedy
            action = nest.map_structure(
                lambda a, s: torch.where(explore.reshape((-1,) + (1,) * (a.ndim - 1)), s, a),
                action,
                sample,
            )
        return AlgStep(
            output=action,
            state=ActorCriticState(actor=actor_state),
            info=ActorCriticInfo(action_distribution=dist),
        )

    def rollout_step(self, inputs: TimeStep, state) -> AlgStep:
        """Sample an action; keep its log-probability and the state value."""
        dist, actor_state, _, encoding = self._policy(inputs, state, check=True)
        value, value_state = self._heads[1](encoding, state.value)
        action = dist_utils.sample_action_distribution(dist)
        log_prob = dist_utils.compute_log_probability(dist, action)
        return AlgStep(
            output=action,
            state=ActorCriticState(actor=actor_state, value=value_state),
            info=ActorCriticRolloutInfo(action=action, log_prob=log_prob, value=value),
        )

    def train_step(self, inputs: TimeStep, state, rollout_info) -> AlgStep:
        """Recompute log π(a|s), V(s) and, when the loss uses it, the entropy, with gradient.

        The entropy is ``()`` when ``loss.uses_entropy()`` is False (no entropy bonus
        and no summaries this update): nothing would read it.
        """
        dist, actor_state, observation, encoding = self._policy(inputs, state, check=False)
        value, value_state = self._heads[1](encoding, state.value)
        info = ActorCriticInfo(
            step_type=inputs.step_type,
            reward=inputs.reward,
            discount=inputs.discount,
            log_prob=dist_utils.compute_log_probability(dist, rollout_info.action),
            entropy=self._entropy_if_used(dist),
            value=value,
            rollout_log_prob=rollout_info.log_prob,
            rollout_value=rollout_info.value,
            advantages=rollout_info.advantages,
            returns=rollout_info.returns,
            mirror=self._mirror_info_if_used(dist, observation),
        )
        return AlgStep(
            output=(), state=ActorCriticState(actor=actor_state, value=value_state), info=info
        )

    def _entropy_if_used(self, dist):
        """``H[π(·|s)]`` if the loss uses it now (``loss.uses_entropy()``), else ``()``."""
        uses_entropy = getattr(self._loss, "uses_entropy", None)
        if uses_entropy is None or uses_entropy() or self._entropy_target is not None:
            return dist_utils.compute_entropy(dist)
        return ()

    def _mirror_info_if_used(self, dist, observation):
        """``MirrorInfo`` (one more actor forward) if the loss has a mirror, else ``()``."""
        if self._mirror is None:
            return ()
        return mirror_info(self._actor_network, dist, observation, self._mirror)

    def calc_loss(self, info: ActorCriticInfo):
        return self.add_entropy_target_loss(self._loss(info), info)

    def add_entropy_target_loss(self, loss_info, info: ActorCriticInfo):
        """``loss_info`` plus the entropy-target bonus (``set_entropy_target``), if any."""
        if self._entropy_target is None:
            return loss_info
        mask = info.step_type != StepType.LAST
        bonus = self._entropy_target.loss(info.entropy, mask)
        return loss_info._replace(loss=loss_info.loss + bonus)


def _head(network):
    """The part of ``network`` that reads the encoding (all of it without an encoder)."""
    return network.head if isinstance(network, EncoderHeadNetwork) else network


def _build_networks(observation_spec, action_spec, ctors, name: str):
    """``(encoder or None, actor network, value network)``; with an encoder, the two
    networks are ``EncoderHeadNetwork``s sharing it. ``ctors``: the actor, value and
    encoding network ctors."""
    actor_network_ctor, value_network_ctor, encoding_network_ctor = ctors
    if encoding_network_ctor is None:
        actor = actor_network_ctor(input_tensor_spec=observation_spec, action_spec=action_spec)
        return None, actor, value_network_ctor(input_tensor_spec=observation_spec)
    encoder = encoding_network_ctor(input_tensor_spec=observation_spec)
    if encoder.is_recurrent:
        raise ValueError(
            f"{name}.encoding_network_ctor: the shared encoder must be feed-forward, got the "
            f"recurrent {type(encoder).__name__} (make the actor/value heads recurrent instead)"
        )
    spec = encoder.output_spec
    actor_head = actor_network_ctor(input_tensor_spec=spec, action_spec=action_spec)
    value_head = value_network_ctor(input_tensor_spec=spec)
    return (
        encoder,
        EncoderHeadNetwork(encoder, actor_head, name=f"{name}.actor_network"),
        EncoderHeadNetwork(encoder, value_head, name=f"{name}.value_network"),
    )
