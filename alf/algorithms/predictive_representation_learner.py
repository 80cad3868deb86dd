"""``PredictiveRepresentationLearner``: a representation trained to predict the next step.

A representation learner of an ``Agent`` (``Agent.representation_learner_cls``): an
encoder :math:`z_t = e(o_t)` gives the latent the RL algorithm sees as its observation,
and the latent is trained (besides by the RL gradient, unless
``Agent.detach_representation``) by predicting targets :math:`y` read from the time step
(``SimpleDecoder.target_field``: ``'reward'``, ``'discount'``, ``'observation'``, ...):

- step 0 (every row): a decoder :math:`d` predicts the row's own target from its latent,
  :math:`\\ell_0 = L(d(z_t), y_t)`;
- step 1 (``num_unroll_steps=1``): a dynamics net :math:`f` predicts the latent of row
  :math:`t` from the previous row's latent and the action taken there,
  :math:`\\hat z_t = f(z_{t-1}, a_{t-1})`, and the decoder reads the same target from it,
  :math:`\\ell_1 = L(d(\\hat z_t), y_t)`; e.g. with ``'reward'``, :math:`\\hat z_t` must
  know :math:`r_t`, the reward of :math:`a_{t-1}` in :math:`o_{t-1}`;
- optionally (``latent_prediction_loss_weight`` :math:`w > 0`), self-prediction as in SPR
  (Schwarzer et al. 2021): :math:`\\hat z_t` also predicts the latent of :math:`o_t` under a
  target encoder :math:`\\bar e` (no gradient; an exponential moving average of :math:`e`
  with ``target_update_tau`` :math:`\\tau`, or :math:`e` itself at :math:`\\tau = 1`),
  :math:`\\ell_z = \\lVert \\hat z_t / \\lVert \\hat z_t \\rVert - \\bar z_t /
  \\lVert \\bar z_t \\rVert \\rVert^2 = 2 - 2 \\cos(\\hat z_t, \\bar z_t)`. A decoder is always
  there (at least one ``decoder_ctor``): a constant latent, which would predict itself
  perfectly, cannot predict a target that varies, so the decoders keep self-prediction
  from collapsing the latent.

A row's loss is :math:`\\sum_d \\tfrac{1}{2}(w_d \\ell_{0,d} + m_t w_d \\ell_{1,d}) +
w\\, m_t \\ell_z` (each decoder's mean over its two steps, as ALF's, with its
``loss_weight`` :math:`w_d`), where the mask :math:`m_t = 0` on FIRST rows, whose
predecessor belongs to another episode (just :math:`\\sum_d w_d \\ell_{0,d}` with
``num_unroll_steps=0``, which has neither :math:`\\ell_1` nor :math:`\\ell_z`).

**Where the previous step comes from.** ``rollout_step`` keeps the previous observation
:math:`o_{t-1}` in its rollout state (zeros after a reset) and records it in its info; the
action :math:`a_{t-1}` is the row's ``prev_action``. So each row carries its own
predecessor, and ``train_step`` needs no train state: it is exact on any minibatch shape
(PPO's length-1 minibatches, the first row of an unroll, replayed rows). ``predict_step``
only encodes (no state).

**How it differs from ALF's.** ALF's learner unrolls an RNN dynamics net ``K``
(``num_unroll_steps``) steps *forward* from :math:`z_t` with the actions
:math:`a_t..a_{t+K-1}` and decodes the targets :math:`y_t..y_{t+K}`, which its
``preprocess_experience`` reads from the replay buffer by position. alf's on-policy
learners (PPO, A2C) never store a replay buffer, and replayed minibatches end anywhere in
an episode, so those future rows are not on every data path; only the previous step is
(recorded at rollout). alf therefore supports ``num_unroll_steps`` 0 and 1: with 1, the
terms are ALF's ``K = 1`` terms (a root's :math:`y` from :math:`z`, its successor's
:math:`y` from :math:`f(z, a)`), indexed at the successor row instead of the root. A larger
value is an error naming ``num_unroll_steps``. The dynamics net is feed-forward,
``dynamics_net_ctor(input_tensor_spec=(latent_spec, action_spec))`` mapping
:math:`(z, a)` to a latent (ALF's is an RNN whose state starts from :math:`z`); the
targets are fields of the time step (ALF's are fields of the stored experience, e.g. the
RL algorithm's recorded value, which a part of an ``Agent`` does not see here);
``postprocessor`` and ``checkpoint`` are not in alf. On replay paths the recorded
:math:`o_{t-1}` is stored with the experience (the observation twice) and was transformed
by the data transformers at rollout (e.g. normalized with the statistics of then), while
:math:`o_t` is re-transformed when replayed.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import NamedTuple

import torch

import alf
import alf.nest as nest
from alf.algorithms.algorithm import Algorithm
from alf.data_structures import AlgStep, LossInfo, StepType, TimeStep
from alf.layers import OneHot
from alf.networks.encoding_networks import EncodingNetwork
from alf.tensor_specs import TensorSpec
from alf.utils.target_networks import soft_update


class PredictiveRepresentationLearnerInfo(NamedTuple):
    """What ``rollout_step`` records: the previous observation :math:`o_{t-1}` ``[B, ...]``
    (zeros on FIRST rows; ``()`` with ``num_unroll_steps=0``)."""

    prev_observation: object = ()


#: ``SimpleDecoder``'s default loss: Huber, per element
_HUBER_LOSS = functools.partial(torch.nn.SmoothL1Loss, reduction="none")


@alf.configurable
class SimpleDecoder(Algorithm):
    """Decodes a target from a latent, with an elementwise loss (ALF's name and arguments).

    Args:
        input_tensor_spec: the spec of the latent it reads.
        target_field: the ``'.'``-path of the target in the row's ``TimeStep``
            (``'reward'``, ``'discount'``, ``'observation'``, ...).
        decoder_net_ctor: ``decoder_net_ctor(input_tensor_spec=)`` building the feed-forward
            ``Network`` whose output has the target's shape (for a scalar target, e.g.
            ``EncodingNetwork`` with ``last_layer_size=1, output_tensor_spec=TensorSpec(())``).
        loss_ctor: ``loss_ctor()`` gives ``loss(predicted, target)`` on ``[N, ...]`` rows
            keeping at least the row dim (default: Huber, ``SmoothL1Loss(reduction='none')``).
        loss_weight: :math:`w_d`, the weight of this decoder's loss.
        summarize_each_dimension: ALF's per-dimension debug summaries: accepted, unused
            (the agent summarizes each decoder's loss, ``loss/<learner name>/<name>``).
        optimizer: this decoder's optimizer (None: the agent's default).
        normalize_target: ALF's running normalization of the target: not in alf, must be
            False.
        append_target_field_to_name: name it ``name + '.' + target_field``.
        debug_summaries, name: as ``Algorithm``'s.
    """

    def __init__(
        self,
        input_tensor_spec,
        target_field: str,
        decoder_net_ctor: Callable,
        loss_ctor: Callable = _HUBER_LOSS,
        loss_weight: float = 1.0,
        summarize_each_dimension: bool = False,
        optimizer=None,
        normalize_target: bool = False,
        append_target_field_to_name: bool = True,
        debug_summaries: bool = False,
        name: str = "SimpleDecoder",
    ):
        if normalize_target:
            raise ValueError("SimpleDecoder.normalize_target=True is not supported by alf")
        if not isinstance(target_field, str) or target_field.split(".")[0] not in TimeStep._fields:
            raise ValueError(
                f"SimpleDecoder.target_field={target_field!r}: must name a field of the "
                f"TimeStep ({', '.join(TimeStep._fields)})"
            )
        if append_target_field_to_name:
            name = f"{name}.{target_field}"
        super().__init__(optimizer=optimizer, debug_summaries=debug_summaries, name=name)
        self._decoder_net = decoder_net_ctor(input_tensor_spec=input_tensor_spec)
        if nest.flatten(self._decoder_net.state_spec):
            raise ValueError(f"SimpleDecoder.decoder_net_ctor: {name}'s network is recurrent")
        self._target_field = target_field
        self._loss = loss_ctor()
        self._loss_weight = float(loss_weight)
        del summarize_each_dimension

    def get_target_fields(self) -> str:
        """The ``TimeStep`` path of the target (ALF's)."""
        return self._target_field

    def target(self, time_step: TimeStep) -> torch.Tensor:
        """The target :math:`y_t` ``[N, ...]`` of rows ``time_step``."""
        return nest.get_field(time_step, self._target_field)

    def predict_step(self, latent, state=()) -> AlgStep:
        """The decoded target ``[N, ...]`` (also the info)."""
        predicted = self._decoder_net(latent)[0]
        return AlgStep(output=predicted, state=state, info=predicted)

    train_step = predict_step

    def calc_loss(self, target, predicted, mask=None) -> LossInfo:
        """:math:`w_d L(\\hat y, y)` per ``[S, N]`` entry of ``[S, N, ...]`` targets and
        predictions (a vector target's loss is its mean over the trailing dims, as ALF's),
        zeroed where ``mask`` ``[S, N]`` is False; ``extra`` holds the unweighted loss."""
        rows = predicted.shape[0] * predicted.shape[1]
        loss = self._loss(
            predicted.reshape(rows, *predicted.shape[2:]),
            target.reshape(rows, *target.shape[2:]).to(predicted.dtype),
        )
        loss = loss.reshape(*predicted.shape[:2], -1).mean(-1)
        if mask is not None:
            loss = loss * mask.to(loss.dtype)
        return LossInfo(loss=loss * self._loss_weight, extra=loss)


def _default_decoder(input_tensor_spec, **kwargs) -> SimpleDecoder:
    """A reward decoder with one hidden layer of 64."""
    return SimpleDecoder(
        input_tensor_spec,
        target_field="reward",
        decoder_net_ctor=functools.partial(
            EncodingNetwork,
            fc_layer_params=(64,),
            last_layer_size=1,
            output_tensor_spec=TensorSpec(()),
        ),
        **kwargs,
    )


def _default_dynamics_net(input_tensor_spec, latent_size: int) -> EncodingNetwork:
    """``[z, one_hot(a) or a]`` -> a ReLU layer of ``latent_size`` -> a linear latent."""
    _, action_spec = input_tensor_spec
    preprocessors = None
    if action_spec.is_discrete:
        if int(action_spec.minimum) != 0 or action_spec.shape != ():
            raise ValueError(
                "PredictiveRepresentationLearner.dynamics_net_ctor: the default one-hot "
                "encodes scalar discrete actions from 0; give a network for "
                f"{action_spec}"
            )
        preprocessors = (None, OneHot(action_spec.num_values))
    return EncodingNetwork(
        input_tensor_spec,
        input_preprocessors=preprocessors,
        fc_layer_params=(latent_size,),
        last_layer_size=latent_size,
    )


@alf.configurable
class PredictiveRepresentationLearner(Algorithm):
    """A latent trained to predict the row's targets and the next latent (module doc).

    Args:
        observation_spec: the observation's spec (the encoder's input).
        action_spec: the action's spec (the dynamics net's second input).
        num_unroll_steps: 1 (the dynamics step :math:`z_{t-1}, a_{t-1} \\to \\hat z_t`) or 0
            (only :math:`d(z_t)`); more is not supported (module doc).
        decoder_ctor: one constructor or a list, each called as
            ``decoder_ctor(latent_spec, debug_summaries=, append_target_field_to_name=True)``
            to build a ``SimpleDecoder``-like decoder; None: a reward decoder (one hidden
            layer of 64).
        encoding_net_ctor: ``encoding_net_ctor(observation_spec)`` building the feed-forward
            encoder :math:`e` (its ``output_spec`` is the latent's); None: an
            ``EncodingNetwork`` with two tanh layers of 64.
        dynamics_net_ctor: ``dynamics_net_ctor(input_tensor_spec=(latent_spec,
            action_spec))`` building :math:`f`, whose output spec is the latent's; None:
            one ReLU layer of the latent's size on the latent and the (one-hot) action,
            then a linear layer to the latent.
        reward_spec: unused (the agent passes it).
        config: unused (the agent passes the ``TrainerConfig``).
        latent_prediction_loss_weight: :math:`w` of the self-prediction term (0: none).
        target_update_tau: :math:`\\tau` of the target encoder's moving average, applied
            after each gradient step (1: the online encoder itself, without gradient).
        encoding_optimizer, dynamics_optimizer: optimizers of the encoder and of the
            dynamics net (None: the agent's default).
        debug_summaries, name: as ``Algorithm``'s.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        num_unroll_steps: int = 1,
        decoder_ctor=None,
        encoding_net_ctor: Callable | None = None,
        dynamics_net_ctor: Callable | None = None,
        reward_spec=TensorSpec(()),
        config=None,
        latent_prediction_loss_weight: float = 0.0,
        target_update_tau: float = 1.0,
        encoding_optimizer=None,
        dynamics_optimizer=None,
        debug_summaries: bool = False,
        name: str = "PredictiveRepresentationLearner",
    ):
        del reward_spec, config
        _check_arguments(num_unroll_steps, latent_prediction_loss_weight, target_update_tau)
        one_step = num_unroll_steps == 1
        super().__init__(
            train_state_spec=(),
            rollout_state_spec=observation_spec if one_step else (),
            predict_state_spec=(),
            debug_summaries=debug_summaries,
            name=name,
        )
        if encoding_net_ctor is None:
            encoding_net_ctor = functools.partial(
                EncodingNetwork, fc_layer_params=(64, 64), activation=torch.tanh
            )
        self._encoding_net = encoding_net_ctor(observation_spec)
        if nest.flatten(self._encoding_net.state_spec):
            raise ValueError(
                "PredictiveRepresentationLearner.encoding_net_ctor: the encoder must be "
                "feed-forward (the learner trains on rows without a train state)"
            )
        latent_spec = self._encoding_net.output_spec
        self._output_spec = latent_spec
        ctors = decoder_ctor if isinstance(decoder_ctor, (list, tuple)) else [decoder_ctor]
        if not ctors:
            raise ValueError("PredictiveRepresentationLearner.decoder_ctor: give at least one")
        self._decoders = torch.nn.ModuleList(
            (ctor or _default_decoder)(
                latent_spec, debug_summaries=debug_summaries, append_target_field_to_name=True
            )
            for ctor in ctors
        )
        self._num_unroll_steps = num_unroll_steps
        self._dynamics_net = None
        if one_step:
            self._dynamics_net = _build_dynamics_net(dynamics_net_ctor, latent_spec, action_spec)
        self._latent_weight = float(latent_prediction_loss_weight)
        self._target_update_tau = float(target_update_tau)
        self._target_encoding_net = None
        if self._latent_weight > 0 and self._target_update_tau < 1.0:
            self._target_encoding_net = copy.deepcopy(self._encoding_net)
            self._target_encoding_net.requires_grad_(False)
        if encoding_optimizer is not None:
            self.add_optimizer(encoding_optimizer, [self._encoding_net])
        if dynamics_optimizer is not None and self._dynamics_net is not None:
            self.add_optimizer(dynamics_optimizer, [self._dynamics_net])

    @property
    def output_spec(self):
        """The latent's spec: the observation the RL algorithm sees."""
        return self._output_spec

    @property
    def num_unroll_steps(self) -> int:
        return self._num_unroll_steps

    def get_decoder(self, target_field: str):
        """The decoder of ``target_field`` (ALF's)."""
        for decoder in self._decoders:
            if decoder.get_target_fields() == target_field:
                return decoder
        raise ValueError(f"{self._name}: no decoder of target_field {target_field!r}")

    # -- the steps -----------------------------------------------------------------

    def predict_step(self, inputs: TimeStep, state=()) -> AlgStep:
        """:math:`z_t = e(o_t)` ``[B, ...]``."""
        return AlgStep(output=self._encoding_net(inputs.observation)[0], state=state)

    def rollout_step(self, inputs: TimeStep, state) -> AlgStep:
        """:math:`z_t`; the state becomes :math:`o_t` and the info records the state
        :math:`o_{t-1}` (reset to zeros at FIRST)."""
        latent = self._encoding_net(inputs.observation)[0]
        if self._dynamics_net is None:
            return AlgStep(output=latent, state=state)
        info = PredictiveRepresentationLearnerInfo(prev_observation=state)
        return AlgStep(output=latent, state=inputs.observation, info=info)

    def predict_next_latent(self, latent, action) -> torch.Tensor:
        """:math:`f(z, a)`: the latent after taking ``action`` ``[N, ...]`` from ``latent``."""
        if self._dynamics_net is None:
            raise ValueError(f"{self._name}: num_unroll_steps=0 has no dynamics net")
        return self._dynamics_net((latent, action))[0]

    def train_step(self, inputs: TimeStep, state, rollout_info) -> AlgStep:
        """The latent :math:`z_t` ``[N, ...]`` with gradient (output) and each row's loss
        ``[N]`` (info: a ``LossInfo`` whose ``extra`` holds each term per row); the rows
        ``[N]`` are any rows of experience (module doc)."""
        not_first = inputs.step_type != StepType.FIRST
        predicted_latent = None
        if self._dynamics_net is None:
            latent = self._encoding_net(inputs.observation)[0]
        else:  # o_t and o_{t-1} encoded in one call
            both = nest.map_structure(
                lambda x, y: torch.cat([x, y]), inputs.observation, rollout_info.prev_observation
            )
            latent, prev_latent = self._encoding_net(both)[0].chunk(2)
            predicted_latent = self.predict_next_latent(prev_latent, inputs.prev_action)
        loss, extra = 0.0, {}
        for decoder in self._decoders:
            target = decoder.target(inputs)
            if predicted_latent is None:
                predicted = decoder.train_step(latent).output.unsqueeze(0)
                decoded = decoder.calc_loss(target.unsqueeze(0), predicted)
            else:
                both = torch.cat([latent, predicted_latent])
                predicted = decoder.train_step(both).output.unflatten(0, (2, latent.shape[0]))
                mask = torch.stack([torch.ones_like(not_first), not_first])
                decoded = decoder.calc_loss(torch.stack([target, target]), predicted, mask)
            loss = loss + decoded.loss.mean(0)
            extra[decoder.name] = decoded.extra.mean(0)
        if self._latent_weight > 0 and predicted_latent is not None:
            latent_loss = self._latent_prediction_loss(inputs, latent, predicted_latent)
            latent_loss = latent_loss * not_first.to(latent_loss.dtype)
            loss = loss + self._latent_weight * latent_loss
            extra["latent_prediction"] = latent_loss
        return AlgStep(output=latent, state=state, info=LossInfo(loss=loss, extra=extra))

    def _latent_prediction_loss(self, inputs: TimeStep, latent, predicted_latent):
        """:math:`\\lVert \\hat z / \\lVert\\hat z\\rVert - \\bar z / \\lVert\\bar z\\rVert
        \\rVert^2` ``[N]``, :math:`\\bar z` without gradient."""
        if self._target_encoding_net is None:
            target = latent.detach()
        else:
            with torch.no_grad():
                target = self._target_encoding_net(inputs.observation)[0]
        predicted = torch.nn.functional.normalize(predicted_latent.flatten(1), dim=-1)
        target = torch.nn.functional.normalize(target.flatten(1), dim=-1)
        return (predicted - target).square().sum(-1)

    def calc_loss(self, info: LossInfo) -> LossInfo:
        """The rows' loss ``[T, B]``; ``extra``: each term's mean over the rows."""
        extra = {name: value.detach().mean() for name, value in info.extra.items()}
        return LossInfo(loss=info.loss, extra=extra)

    def after_update(self, experience, train_info) -> None:
        """Move the target encoder towards the encoder: :math:`\\bar\\theta \\leftarrow
        (1 - \\tau)\\bar\\theta + \\tau\\theta`."""
        if self._target_encoding_net is not None:
            soft_update(self._target_encoding_net, self._encoding_net, self._target_update_tau)


def _check_arguments(num_unroll_steps, latent_weight, tau) -> None:
    if num_unroll_steps not in (0, 1):
        raise ValueError(
            f"PredictiveRepresentationLearner.num_unroll_steps={num_unroll_steps}: alf "
            "supports 0 and 1 (future rows are not on every data path: on-policy learners "
            "keep no replay buffer; the previous row is recorded at rollout)"
        )
    if latent_weight < 0:
        raise ValueError(
            "PredictiveRepresentationLearner.latent_prediction_loss_weight must be >= 0, "
            f"got {latent_weight}"
        )
    if latent_weight > 0 and num_unroll_steps == 0:
        raise ValueError(
            "PredictiveRepresentationLearner.latent_prediction_loss_weight > 0 needs "
            "num_unroll_steps=1 (the dynamics net predicts the latent)"
        )
    if not 0.0 < tau <= 1.0:
        raise ValueError(
            f"PredictiveRepresentationLearner.target_update_tau must be in (0, 1], got {tau}"
        )


def _build_dynamics_net(ctor, latent_spec, action_spec):
    spec = (latent_spec, action_spec)
    if ctor is None:
        return _default_dynamics_net(spec, int(torch.Size(latent_spec.shape).numel()))
    net = ctor(input_tensor_spec=spec)
    if net.output_spec.shape != latent_spec.shape or nest.flatten(net.state_spec):
        raise ValueError(
            "PredictiveRepresentationLearner.dynamics_net_ctor: a feed-forward network "
            f"whose output is the latent's shape {tuple(latent_spec.shape)}, got "
            f"{tuple(net.output_spec.shape)}"
        )
    return net
