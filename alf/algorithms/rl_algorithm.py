"""``RLAlgorithm``: an algorithm that acts in a batched environment and learns from it.

One training iteration (``train_iter``) is an *unroll* — ``unroll_length`` steps
of every environment with the rollout policy, taken by the algorithm's
``Unroller`` (the acting loop, ``alf/learners/unroller.py``) — followed by
training on it by the algorithm's learner (``alf/learners/__init__.py``), which
the algorithm class chooses through ``learner_class``: one update for on-policy
algorithms, a replay buffer for off-policy ones, epochs over the latest unroll for
PPO. ``docs/design.md`` follows one iteration through these files.
"""

from __future__ import annotations

import functools

import torch

import alf.nest as nest
import alf.summary
from alf.algorithms.algorithm import Algorithm
from alf.data_structures import AlgStep, BatchInfo, Experience, LossInfo, StepType, TimeStep
from alf.data_transformers.base import DataTransformer, IdentityDataTransformer
from alf.learners.acting import Actor
from alf.learners.learner import Learner, sample_weights
from alf.learners.minibatch_shuffle import EnvStratifiedShuffle
from alf.learners.unroller import AlgorithmPolicy, Unroller
from alf.metrics import EpisodeMetrics
from alf.tensor_specs import TensorSpec
from alf.utils import mixed_precision
from alf.utils.device import get_device, to_device
from alf.utils.torch_utils import reset_state_if_necessary


class RLAlgorithm(Algorithm):
    """Base class of reinforcement-learning algorithms.

    Subclasses implement ``predict_step`` (evaluation, deterministic),
    ``rollout_step`` (collection) and ``train_step`` (training), each returning
    an ``AlgStep``, and ``calc_loss(info) -> LossInfo``.

    Args:
        observation_spec: nest of specs of the (transformed) observation.
        action_spec: nest of bounded specs of the action.
        reward_spec: spec of the reward.
        train_state_spec, rollout_state_spec, predict_state_spec: see ``Algorithm``.
        env: the batched training environment (None for evaluation-only use).
        config: the ``TrainerConfig``.
        optimizer: default optimizer spec.
        debug_summaries: extra summaries.
        name: name in summaries.
    """

    #: the ``Learner`` class of the data regime the algorithm trains in (set by
    #: ``OnPolicyAlgorithm``, ``OffPolicyAlgorithm`` and ``PPOAlgorithm``)
    learner_class: type[Learner] | None = None

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        train_state_spec=(),
        rollout_state_spec=None,
        predict_state_spec=None,
        env=None,
        config=None,
        optimizer=None,
        debug_summaries: bool = False,
        name: str = "RLAlgorithm",
    ):
        super().__init__(
            train_state_spec=train_state_spec,
            rollout_state_spec=rollout_state_spec,
            predict_state_spec=predict_state_spec,
            optimizer=optimizer,
            debug_summaries=debug_summaries,
            name=name,
        )
        self._observation_spec = observation_spec
        self._action_spec = action_spec
        self._reward_spec = reward_spec
        self._env = env
        self._config = config
        if config is not None:
            self.max_non_finite_updates_in_a_row = config.max_non_finite_updates_in_a_row
            self.set_mixed_precision(mixed_precision.from_config(config, get_device()))
        self._data_transformer: DataTransformer = IdentityDataTransformer(observation_spec)
        self._unroller = Unroller(AlgorithmPolicy(self), env) if env is not None else None
        self._acting_streams = None  # (seed, first_env_id) of set_acting_streams
        self._unroll_observer = None
        has_learner = config is not None and self.learner_class is not None
        self._learner = self.learner_class(self, config) if has_learner else None

    # -- description ---------------------------------------------------------

    @property
    def observation_spec(self):
        return self._observation_spec

    @property
    def action_spec(self):
        return self._action_spec

    @property
    def reward_spec(self):
        return self._reward_spec

    @property
    def config(self):
        return self._config

    @property
    def data_transformer(self) -> DataTransformer:
        return self._data_transformer

    def set_data_transformer(self, transformer: DataTransformer) -> None:
        """Transform observations with ``transformer`` (at rollout, and when replaying).

        ``create_algorithm`` builds the data transformers of
        ``TrainerConfig.data_transformer_ctor`` and hands them over with this, right after
        construction and before any step (until then the algorithm has the identity).
        ``transformer.transformed_observation_spec`` must be the ``observation_spec`` the
        algorithm was built with.
        """
        if transformer.transformed_observation_spec != self._observation_spec:
            raise ValueError(
                f"{self._name}: the data transformer gives observations of spec "
                f"{transformer.transformed_observation_spec}, but the algorithm was built for "
                f"{self._observation_spec}"
            )
        if self._learner is not None:
            self._learner.prepare_data_transformer(transformer)
        self._data_transformer = transformer
        if self._env is not None:
            self._unroller = Unroller(AlgorithmPolicy(self), self._env)
            if self._acting_streams is not None:
                self._unroller.set_streams(*self._acting_streams)

    def set_acting_streams(self, seed: int, first_env_id: int = 0) -> None:
        """Act in the training env with per-env counter-based random streams seeded with
        ``seed`` (``Unroller.set_streams``; the env's rows are the run's envs
        ``first_env_id ..``; remote samplers have their own), and cut minibatches with
        ``EnvStratifiedShuffle`` (``alf/learners/minibatch_shuffle.py``). The trainer
        calls it."""
        self._acting_streams = (seed, first_env_id)
        if self._unroller is not None:
            self._unroller.set_streams(seed, first_env_id)
        if self._learner is not None:  # minibatches the same on any number of ranks
            self._learner.set_shuffle(EnvStratifiedShuffle(seed, first_env_id))

    @property
    def metrics(self) -> EpisodeMetrics | None:
        """Episode metrics of the training environment (raw rewards)."""
        return self._unroller.metrics if self._unroller is not None else None

    @property
    def env(self):
        return self._env

    @property
    def unroller(self) -> Actor | None:
        """The actor on the training environment (None without one): an ``Unroller``, or
        what ``set_unroller`` gave."""
        return self._unroller

    def set_unroller(self, unroller: Actor) -> None:
        """Act through ``unroller`` instead: another ``Actor`` (``alf/learners/acting.py``),
        e.g. remote samplers' ``SamplerUnroller``.

        Raises:
            TypeError: ``unroller`` is not an ``Actor``.
        """
        if not isinstance(unroller, Actor):
            raise TypeError(
                f"{self._name}.set_unroller needs an alf.learners.acting.Actor, got "
                f"{type(unroller).__name__}"
            )
        self._unroller = unroller

    def set_unroll_observer(self, observer) -> None:
        """Call ``observer(unroll)`` with each training iteration's complete ``Unroll``,
        before the learner trains on it (the trainer records its hash,
        ``alf.utils.unroll_hash``); None: no observer."""
        self._unroll_observer = observer

    def actor_context(self) -> dict:
        """What a copy of this algorithm acting elsewhere (a local-inference sampler's)
        needs from the learner besides the weights, for one unroll; ``{}`` here. The copy
        receives it with ``set_actor_context``."""
        return {}

    def set_actor_context(self, context: dict) -> None:
        """Act by the learner's ``actor_context()`` (on a policy copy with no learner state
        of its own); nothing to do here."""

    def compose_into(self, agent: RLAlgorithm) -> None:
        """Train as the RL algorithm of ``agent`` (an ``AgentAlgorithm``, which composes
        other parts around it): ``update_from_experience`` keeps this algorithm's masks
        and hooks, but the update is the agent's (its ``train_steps``, ``calc_loss``,
        gradient step over every part, ``after_update``), and the learner is the agent's.
        """
        object.__setattr__(self, "_update_host", agent)  # not a sub-module: no cycle
        self._learner = agent.learner

    @property
    def learner(self) -> Learner | None:
        """The training iteration (None without a ``TrainerConfig``)."""
        return self._learner

    @property
    def replay_buffer(self):
        """The learner's replay buffer (None if it keeps none or has not built it yet)."""
        return self._learner.replay_buffer if self._learner is not None else None

    def load_replay_buffer_state(self, state: dict) -> None:
        """Load a checkpointed ``ReplayBuffer.state_dict()`` into the learner's buffer."""
        self._learner.load_replay_buffer_state(state)

    def is_stateful(self, which: str = "rollout") -> bool:
        """Whether the ``'rollout'``, ``'train'`` or ``'predict'`` state is non-empty."""
        cache = self.__dict__.setdefault("_stateful_cache", {})
        if which not in cache:
            spec = {
                "rollout": self._rollout_state_spec,
                "train": self._train_state_spec,
                "predict": self._predict_state_spec,
            }[which]
            cache[which] = bool(nest.flatten(spec))
        return cache[which]

    # -- the three steps -----------------------------------------------------

    def predict_step(self, inputs: TimeStep, state) -> AlgStep:
        """Deterministic action for evaluation, ``inputs`` ``[B, ...]``."""
        raise NotImplementedError

    def rollout_step(self, inputs: TimeStep, state) -> AlgStep:
        """Action for data collection (sampled), ``inputs`` ``[B, ...]``."""
        raise NotImplementedError

    def train_step(self, inputs: TimeStep, state, rollout_info) -> AlgStep:
        """Recompute what the loss needs, with gradient, on ``[B, ...]`` inputs."""
        raise NotImplementedError

    def calc_loss(self, info) -> LossInfo:
        """The loss from ``train_step`` infos stacked ``[T, B, ...]``."""
        raise NotImplementedError

    def preprocess_experience(self, experience: Experience) -> Experience:
        """Hook on time-major ``[T, B, ...]`` experience before minibatching
        (e.g. advantages for PPO). Identity by default."""
        return experience

    def after_update(self, experience: Experience, train_info) -> None:
        """Hook after each gradient step (e.g. target network updates)."""

    def after_train_iter(self, experience: Experience, train_info=None) -> None:
        """Hook at the end of each training iteration."""

    # -- acting ----------------------------------------------------------------

    def restart_environment(self, seed: int) -> None:
        """Reseed the training env; the next unroll starts new episodes from ``reset()``."""
        if self._learner is not None:
            self._learner.end_trajectories()
        self._unroller.restart(seed)

    def prenormalize(self, num_steps: int) -> int:
        """Initialize the data transformers' statistics before training.

        Steps every training env ``num_steps`` times with ``rollout_step`` of the
        current (initial) policy, every statistics transformer updating as it
        transforms; nothing is stored or trained on, and training then starts from
        fresh episodes (see ``Unroller.prenormalize``).

        Returns:
            the number of environment steps taken (``num_steps * batch_size``).
        """
        if self._unroller is None:
            raise RuntimeError(f"{self._name} has no environment to unroll")
        return self._unroller.prenormalize(num_steps)

    # -- training on [T, B] experience ---------------------------------------

    def train_iter(self) -> int:
        """One training iteration: an unroll, then the learner's training on it.

        Returns:
            the number of environment steps taken.
        """
        if self._unroller is None or self._learner is None:
            missing = [
                what
                for what, value in [
                    ("an environment (env)", self._env),
                    ("a TrainerConfig (config)", self._config),
                    ("a learner_class", self.learner_class),
                ]
                if value is None
            ]
            raise RuntimeError(f"{self._name} cannot train without {' and '.join(missing)}")
        learner = self._learner
        unroll = self._unroller.unroll(
            self._config.unroll_length,
            raw=learner.raw_experience,
            bootstrap=learner.needs_bootstrap_row(),
        )
        if self._unroll_observer is not None:
            self._unroll_observer(unroll)
        learner.train(unroll)
        self._data_transformer.after_train_iter()
        return unroll.num_env_steps

    def _temporally_independent(self) -> bool:
        """``TrainerConfig.temporally_independent_train_step``; unset (or no config): when
        the algorithm has no train state."""
        cfg = self._config
        flag = None if cfg is None else cfg.temporally_independent_train_step
        return (not self.is_stateful("train")) if flag is None else flag

    def _starts_from_rollout_state(self) -> bool:
        """Whether step-by-step training starts each sequence from the state stored at
        rollout (``use_rollout_state``, or ``trajectory_mini_batches``), not from zeros."""
        cfg = self._config
        return cfg is not None and (cfg.use_rollout_state or cfg.trajectory_mini_batches)

    def train_steps(self, experience: Experience):
        """``train_step`` over time-major ``[T, B]`` experience; returns infos ``[T, B, ...]``."""
        if self._temporally_independent():
            return self._train_steps_flat(experience)
        return self._train_steps_sequential(experience)

    def _train_steps_flat(self, experience: Experience):
        """One ``train_step`` on the ``T * B`` rows of ``experience`` ``[T, B]`` at once."""
        num_steps, batch_size = experience.time_step.step_type.shape[:2]
        time_step, rollout_info = nest.map_structure(
            _merge_time_and_batch, (experience.time_step, experience.rollout_info)
        )
        state = to_device(self.get_initial_train_state(num_steps * batch_size))
        step = self.train_step(time_step, state, rollout_info)
        return nest.map_structure(
            functools.partial(torch.unflatten, dim=0, sizes=(num_steps, batch_size)), step.info
        )

    def _train_steps_sequential(self, experience: Experience):
        first = nest.flatten(experience.time_step)[0]
        num_steps, batch_size = first.shape[:2]
        initial = to_device(self.get_initial_train_state(batch_size))
        if self._starts_from_rollout_state():
            state = nest.prune_nest_like(
                nest.map_structure(lambda x: x[0], experience.state), initial
            )
        else:
            state = initial
        infos = []
        for t in range(num_steps):
            exp_t = nest.map_structure(lambda x, t=t: x[t], experience)
            state = reset_state_if_necessary(state, initial, exp_t.time_step.is_first())
            step = self.train_step(exp_t.time_step, state, exp_t.rollout_info)
            infos.append(step.info)
            state = step.state
        return nest.stack_nests(infos)

    def update_from_experience(self, experience: Experience, valid_masks=None) -> LossInfo:
        """``train_steps`` → ``calc_loss`` → ``update_with_gradient`` → ``after_update``.

        With prioritized replay (``ReplayLearner``), the importance weights in
        ``experience.batch_info`` weight the per-sample loss, and a returned
        ``LossInfo.priority`` ``[B]`` updates the priorities of the replayed
        sequences. ``train_steps`` gets the experience without its ``batch_info``
        (whose leaves are ``[B]``); ``after_update`` gets it whole.

        With mixed precision (``TrainerConfig.enable_amp``) ``train_steps`` and
        ``calc_loss`` run under autocast and their loss is taken back to float32
        (``alf.utils.mixed_precision``); every learner's updates come through here.

        Args:
            experience: time-major ``[T, B]`` experience on the training device.
            valid_masks: ``[T, B]`` extra mask (e.g. the bootstrap row or padding);
                LAST steps are always masked out.
        """
        weights = sample_weights(experience)
        extra_args = {} if weights is None else {"sample_weights": weights}
        host = self.__dict__.get("_update_host", self)  # an agent composing it (compose_into)
        amp = self._mixed_precision
        with torch.enable_grad():
            if amp is None:
                info, loss_info = host._train_and_calc_loss(experience)
            else:  # under autocast; the loss back in float32
                info, loss_info = amp.forward(host._train_and_calc_loss, experience)
            mask = experience.time_step.step_type != StepType.LAST
            if valid_masks is not None:
                mask = mask & valid_masks
            loss_info = host.update_with_gradient(loss_info, mask, **extra_args)
        host.after_update(experience, info)
        host._summarize_loss(loss_info)
        self._update_priority(experience.batch_info, loss_info.priority)
        return loss_info

    def _train_and_calc_loss(self, experience: Experience):
        """``(info, loss_info)``: ``train_steps`` (without ``batch_info``), ``calc_loss``."""
        info = self.train_steps(experience._replace(batch_info=()))
        return info, self.calc_loss(info)

    def _update_priority(self, batch_info, priority) -> None:
        """Send ``priority`` ``[B]`` to the replay buffer for the sequences of ``batch_info``."""
        buffer = self.replay_buffer
        if not torch.is_tensor(priority) or buffer is None or not buffer.prioritized_sampling:
            return
        if not isinstance(batch_info, BatchInfo) or not torch.is_tensor(batch_info.env_ids):
            return
        buffer.update_priority(batch_info.env_ids, batch_info.positions, priority)

    def _summarize_loss(self, loss_info: LossInfo) -> None:
        if not alf.summary.should_record_summaries():
            return
        alf.summary.scalar("loss/loss", loss_info.loss)
        for path, value in nest.flatten_with_path(loss_info.extra):
            alf.summary.scalar(f"loss/{path}", value)
        for name, norm in self.last_grad_norms.items():
            alf.summary.scalar(f"grad_norm/{name}", norm)


def _merge_time_and_batch(x: torch.Tensor) -> torch.Tensor:
    """``[T, B, ...]`` → ``[T * B, ...]``."""
    return x.flatten(0, 1)
