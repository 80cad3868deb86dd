"""``ICMAlgorithm``: the intrinsic curiosity module (Pathak et al. 2017).

An encoder :math:`\\phi` embeds observations. From the transition
:math:`(s_{t-1}, a_{t-1}, s_t)` that row ``t`` arrives by (``a_{t-1}`` is the row's
``prev_action``, :math:`s_{t-1}` the observation the rollout state kept):

- the *inverse model* :math:`g` predicts the action from both embeddings,
  :math:`L_I = \\mathrm{CE}(g(\\phi(s_{t-1}), \\phi(s_t)), a_{t-1})` for discrete actions
  (:math:`\\tfrac12 \\mathrm{mean}_j (g_j - a_j)^2` for continuous ones); it alone trains
  the encoder, so :math:`\\phi` keeps what the agent's actions change;
- the *forward model* :math:`f` predicts the next embedding,
  :math:`L_F = \\tfrac12 \\mathrm{mean}_j (f(\\phi(s_{t-1}), \\bar a_{t-1})_j -
  \\phi(s_t)_j)^2` with the embeddings held fixed (:math:`\\bar a` one-hot for discrete
  actions);
- the intrinsic reward of row ``t`` is the forward model's error :math:`L_F` at rollout
  (the surprise of arriving at :math:`s_t`), 0 at FIRST rows (no predecessor in the
  episode), normalized on the learner's side with ``reward_adapt_speed``.

The loss is :math:`L_I + L_F` per row, 0 at FIRST rows (ALF's weighting; the paper's is
:math:`(1-\\beta) L_I + \\beta L_F`). With ``observation_spec`` given (as ``Agent`` does
when it builds the module), observations are normalized by running statistics of the
observations trained on. Every row carries its predecessor (``ICMInfo.prev_observation``),
so training needs no train state and works on any minibatch shape.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

import alf
import alf.nest as nest
import alf.summary
from alf.algorithms.intrinsic_reward_module import IntrinsicRewardModule, mask_first
from alf.data_structures import AlgStep, LossInfo, StepType, TimeStep
from alf.networks.encoding_networks import EncodingNetwork
from alf.tensor_specs import TensorSpec
from alf.utils.normalizers import AdaptiveNormalizer


class ICMInfo(NamedTuple):
    """Rollout: the raw reward ``[B]`` and the previous observation; training: the loss
    terms ``[B]``."""

    reward: object = ()
    prev_observation: object = ()
    forward_loss: object = ()
    inverse_loss: object = ()
    step_type: object = ()


@alf.configurable
class ICMAlgorithm(IntrinsicRewardModule):
    """The intrinsic curiosity module (module doc).

    Args:
        action_spec: the action's spec (one tensor: discrete scalar or continuous).
        observation_spec: the observation's spec; given: observations are normalized.
        hidden_size: the hidden layers of the default forward and inverse models.
        reward_adapt_speed: see ``IntrinsicRewardModule`` (ALF's 8.0).
        reward_zero_mean: the normalization subtracts the running mean (ALF's); False:
            it only divides by the running standard deviation (the reward stays >= 0).
        encoding_net: :math:`\\phi` (None: the observation itself is the embedding).
        forward_net: ``[embedding, action]`` → embedding (None: an MLP).
        inverse_net: ``[embedding, embedding]`` → action logits or action (None: an MLP).
        activation: the default models' hidden activation.
        optimizer: the module's optimizer (None: the agent's default).
        name: name in summaries.
    """

    def __init__(
        self,
        action_spec,
        observation_spec=None,
        hidden_size=256,
        reward_adapt_speed: float | None = 8.0,
        reward_zero_mean: bool = True,
        encoding_net=None,
        forward_net=None,
        inverse_net=None,
        activation=torch.relu_,
        optimizer=None,
        name: str = "ICMAlgorithm",
    ):
        flat_actions = nest.flatten(action_spec)
        if len(flat_actions) != 1 or (flat_actions[0].is_discrete and flat_actions[0].shape):
            raise ValueError(f"{name}: one scalar discrete or continuous action, got {action_spec}")
        action_spec = flat_actions[0]
        if encoding_net is None and observation_spec is None:
            raise ValueError(f"{name}: needs observation_spec or encoding_net")
        feature_spec = observation_spec if encoding_net is None else encoding_net.output_spec
        # what the rollout state keeps: the observation (the encoder's input, when only
        # the encoder is given, as ALF's confs do)
        state_spec = (
            encoding_net.input_tensor_spec if observation_spec is None else observation_spec
        )
        if nest.is_nested(feature_spec) or len(feature_spec.shape) != 1:
            raise ValueError(f"{name}: the embedding must be one vector, got {feature_spec}")
        super().__init__(
            reward_adapt_speed=reward_adapt_speed,
            reward_zero_mean=reward_zero_mean,
            rollout_state_spec=state_spec,
            predict_state_spec=(),
            optimizer=optimizer,
            name=name,
        )
        self._action_spec = action_spec
        if action_spec.is_discrete:
            self._num_actions = int(action_spec.maximum) - int(action_spec.minimum) + 1
        else:
            self._num_actions = action_spec.shape[-1]
        self._observation_normalizer = None
        if observation_spec is not None:
            float_spec = nest.map_structure(
                lambda s: TensorSpec(s.shape, torch.float32), observation_spec
            )
            self._observation_normalizer = AdaptiveNormalizer(float_spec)
        hidden = (hidden_size,) if isinstance(hidden_size, int) else tuple(hidden_size)
        dim = feature_spec.shape[0]
        action_input = TensorSpec((self._num_actions,))
        if forward_net is None:
            forward_net = EncodingNetwork(
                [feature_spec, action_input],
                fc_layer_params=hidden,
                activation=activation,
                last_layer_size=dim,
                name="forward_net",
            )
        if inverse_net is None:
            inverse_net = EncodingNetwork(
                [feature_spec, feature_spec],
                fc_layer_params=hidden,
                activation=activation,
                last_layer_size=self._num_actions,
                name="inverse_net",
            )
        self._encoding_net = encoding_net
        self._forward_net = forward_net
        self._inverse_net = inverse_net

    def _encode(self, observation):
        if self._observation_normalizer is not None:
            observation = self._observation_normalizer.normalize(observation)
        if self._encoding_net is None:
            return observation.to(torch.float32)
        return self._encoding_net(observation)[0]

    def _action_input(self, action: torch.Tensor) -> torch.Tensor:
        if self._action_spec.is_discrete:
            index = action.long() - int(self._action_spec.minimum)
            return F.one_hot(index, self._num_actions).to(torch.float32)
        return action.to(torch.float32)

    def _losses(self, prev_observation, time_step: TimeStep):
        """``(forward loss, inverse loss)`` ``[N]`` of each row's transition."""
        prev_feature = self._encode(prev_observation)
        feature = self._encode(time_step.observation)
        prev_action = time_step.prev_action.detach()
        forward = self._forward_net([prev_feature.detach(), self._action_input(prev_action)])[0]
        forward_loss = 0.5 * (forward - feature.detach()).square().mean(-1)
        predicted = self._inverse_net([prev_feature, feature])[0]
        if self._action_spec.is_discrete:
            target = prev_action.long() - int(self._action_spec.minimum)
            inverse_loss = F.cross_entropy(predicted, target, reduction="none")
        else:
            inverse_loss = 0.5 * (predicted - prev_action).square().mean(-1)
        return forward_loss, inverse_loss

    def rollout_step(self, inputs: TimeStep, state) -> AlgStep:
        """The raw reward :math:`L_F` of arriving at this row (0 at FIRST); the state
        keeps this observation for the next row."""
        with torch.no_grad():
            forward_loss, _ = self._losses(state, inputs)
        reward = mask_first(forward_loss, inputs.step_type)
        info = ICMInfo(reward=reward, prev_observation=state)
        return AlgStep(output=reward, state=inputs.observation, info=info)

    def intrinsic_reward(self, time_step, rollout_info, update_statistics: bool = True):
        """The normalized reward (0 at FIRST rows); also merges the rows' observations
        into the observation statistics."""
        if update_statistics and self._observation_normalizer is not None:
            self._observation_normalizer.update(time_step.observation)
        reward = super().intrinsic_reward(time_step, rollout_info, update_statistics)
        return mask_first(reward, time_step.step_type)

    def rewarded_rows(self, time_step):
        """The rows that are not FIRST (a FIRST row has no transition to be surprised by)."""
        return time_step.step_type != StepType.FIRST

    def train_step(self, inputs: TimeStep, state, rollout_info: ICMInfo) -> AlgStep:
        forward_loss, inverse_loss = self._losses(rollout_info.prev_observation, inputs)
        info = ICMInfo(
            forward_loss=forward_loss, inverse_loss=inverse_loss, step_type=inputs.step_type
        )
        return AlgStep(state=state, info=info)

    def calc_loss(self, info: ICMInfo) -> LossInfo:
        """:math:`L_I + L_F` per row ``[T, B]``, 0 at FIRST rows."""
        forward_loss = mask_first(info.forward_loss, info.step_type)
        inverse_loss = mask_first(info.inverse_loss, info.step_type)
        extra = ()
        if alf.summary.should_record_summaries():  # only read then: not per minibatch
            valid = (info.step_type != StepType.FIRST).float().sum().clamp(min=1)
            extra = {
                "forward_loss": forward_loss.detach().sum() / valid,
                "inverse_loss": inverse_loss.detach().sum() / valid,
            }
        return LossInfo(loss=forward_loss + inverse_loss, extra=extra)
