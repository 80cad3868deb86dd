"""``RNDAlgorithm``: exploration by random network distillation (Burda et al. 2019).

A fixed, randomly initialized target network :math:`f` and a trained predictor
:math:`\\hat f` embed the observation; the intrinsic reward of arriving at :math:`s_t` is
the predictor's error

.. math:: r^i_t = \\lVert \\hat f(\\bar s_t) - f(\\bar s_t) \\rVert^2,

and the predictor's loss is the same quantity (with gradient). States seen often are
predicted well and pay little. As in the paper, the observation is normalized first,
:math:`\\bar s = \\mathrm{clip}((s - \\mu) / \\sigma, -5, 5)`, with running statistics of the
observations trained on (``observation_adapt_speed``; the paper's own initialization by
random steps is ``TrainerConfig.num_prenormalization_steps``' job for the RL algorithm's
normalizers, not this module's), and the reward is divided by a running standard deviation
(``reward_adapt_speed``; the paper divides by that of the intrinsic *returns*, alf by that
of the rewards, as ALF does) without subtracting a mean. ``keep_stacked_frames``: of
frame-stacked observations (``[k, ...]``) only the last frames are read (the paper uses 1
of Atari's 4).

It is an ``IntrinsicRewardModule`` of an ``Agent`` (``alf/algorithms/agent.py``): the RL
algorithm is trained on ``extrinsic_reward_coef * r + intrinsic_reward_coef * r^i``.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

import alf
import alf.nest as nest
import alf.summary
from alf.algorithms.intrinsic_reward_module import IntrinsicRewardModule
from alf.configuration.argtypes import NonNegativeInt
from alf.data_structures import AlgStep, LossInfo, TimeStep
from alf.networks.encoding_networks import EncodingNetwork
from alf.tensor_specs import TensorSpec
from alf.utils.normalizers import AdaptiveNormalizer


class RNDInfo(NamedTuple):
    """What ``rollout_step`` records: the raw reward ``[B]``."""

    reward: object = ()


@alf.configurable
class RNDAlgorithm(IntrinsicRewardModule):
    """Random network distillation (module doc).

    Args:
        target_net: the fixed random network :math:`f` (never trained); None: an
            ``EncodingNetwork`` on the observation with ``fc_layer_params`` hidden layers
            and an ``embedding_dim`` linear output.
        predictor_net: the trained predictor :math:`\\hat f` (same default, with one more
            hidden layer, as in the paper).
        encoder_net: a fixed network both read instead of the observation (ALF's); None.
        reward_adapt_speed: see ``IntrinsicRewardModule`` (None: not normalized).
        observation_adapt_speed: see ``AdaptiveNormalizer``'s ``speed``; the
            observation is normalized when ``observation_spec`` is given.
        observation_spec: the spec of the observation the module sees (``Agent`` passes
            it); None: no observation normalization (ALF's ``RNDAlgorithm()`` in a conf).
        optimizer: the predictor's optimizer (None: the agent's default).
        clip_value: clip the normalized reward to ``[-clip_value, clip_value]`` if > 0.
        keep_stacked_frames: read only the last ``k`` frames of ``[frames, ...]``
            observations (0: all of it).
        action_spec: unused (the agent passes it to the parts it builds).
        fc_layer_params, embedding_dim: the default networks' sizes.
        observation_clip: the normalized observation's clip (the paper's 5).
        name: name in summaries.
    """

    def __init__(
        self,
        target_net=None,
        predictor_net=None,
        encoder_net=None,
        reward_adapt_speed: float | None = None,
        observation_adapt_speed: float | None = None,
        observation_spec=None,
        optimizer=None,
        clip_value: float = -1.0,
        keep_stacked_frames: NonNegativeInt = 0,
        action_spec=None,
        fc_layer_params: tuple[int, ...] = (128, 128),
        embedding_dim: int = 64,
        observation_clip: float = 5.0,
        name: str = "RNDAlgorithm",
    ):
        del action_spec
        super().__init__(
            reward_adapt_speed=reward_adapt_speed,
            reward_zero_mean=False,
            clip_value=clip_value,
            optimizer=optimizer,
            name=name,
        )
        self._keep_stacked_frames = keep_stacked_frames
        spec = observation_spec
        if keep_stacked_frames > 0 and spec is not None:
            spec = TensorSpec((keep_stacked_frames, *spec.shape[1:]), spec.dtype)
        self._observation_normalizer = None
        if spec is not None:
            float_spec = nest.map_structure(lambda s: TensorSpec(s.shape, torch.float32), spec)
            self._observation_normalizer = AdaptiveNormalizer(
                float_spec, speed=observation_adapt_speed, clipping=observation_clip
            )
        if target_net is None or predictor_net is None:
            if spec is None:
                raise ValueError(f"{name}: target_net and predictor_net need observation_spec")
            if encoder_net is not None:
                spec = encoder_net.output_spec
            hidden = tuple(fc_layer_params)
            if target_net is None:
                target_net = EncodingNetwork(
                    spec, fc_layer_params=hidden, last_layer_size=embedding_dim
                )
            if predictor_net is None:
                predictor_net = EncodingNetwork(
                    spec, fc_layer_params=hidden + hidden[-1:], last_layer_size=embedding_dim
                )
        self._encoder_net = encoder_net
        self._target_net = target_net
        self._predictor_net = predictor_net
        for module in (target_net, encoder_net):
            if module is not None:
                for p in module.parameters():
                    p.requires_grad_(False)

    def _observation(self, time_step: TimeStep):
        observation = time_step.observation
        if self._keep_stacked_frames > 0:
            observation = observation[:, -self._keep_stacked_frames :]
        if self._observation_normalizer is not None:
            observation = self._observation_normalizer.normalize(observation)
        if self._encoder_net is not None:
            with torch.no_grad():
                observation = self._encoder_net(observation)[0]
        return observation

    def _error(self, observation) -> torch.Tensor:
        """:math:`\\lVert \\hat f(s) - f(s)\\rVert^2` ``[B]``, with the predictor's gradient."""
        with torch.no_grad():
            target = self._target_net(observation)[0]
        prediction = self._predictor_net(observation)[0]
        return (prediction - target).square().sum(-1)

    def rollout_step(self, inputs: TimeStep, state) -> AlgStep:
        """The raw reward :math:`r^i_t` of each row (recorded as ``info.reward``)."""
        with torch.no_grad():
            reward = self._error(self._observation(inputs))
        return AlgStep(output=reward, state=state, info=RNDInfo(reward=reward))

    def intrinsic_reward(self, time_step, rollout_info, update_statistics: bool = True):
        """The normalized reward; also merges these rows' observations into the
        observation statistics (the learner's: every layout agrees)."""
        if update_statistics and self._observation_normalizer is not None:
            observation = time_step.observation
            if self._keep_stacked_frames > 0:
                observation = observation[:, :, -self._keep_stacked_frames :]
            self._observation_normalizer.update(observation)
        return super().intrinsic_reward(time_step, rollout_info, update_statistics)

    def train_step(self, inputs: TimeStep, state, rollout_info) -> AlgStep:
        """The predictor's error ``[N]`` with gradient."""
        return AlgStep(state=state, info=self._error(self._observation(inputs)))

    def calc_loss(self, info: torch.Tensor) -> LossInfo:
        """The predictor's loss: its error on every row ``[T, B]``."""
        if not alf.summary.should_record_summaries():  # the extra is only read then
            return LossInfo(loss=info)
        return LossInfo(loss=info, extra={"prediction_error": info.detach().mean()})
