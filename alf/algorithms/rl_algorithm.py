"""``RLAlgorithm``: an algorithm that interacts with a batched environment.

One training iteration (``train_iter``) is an *unroll* — ``unroll_length`` steps
of every environment with the rollout policy, without gradient — followed by
training on what was collected:

* on-policy (``OnPolicyAlgorithm``): the unroll ``[T, B]`` is used for exactly
  one update and discarded;
* off-policy (``OffPolicyAlgorithm``): raw experience goes into a replay buffer
  and minibatches come from it (whole-buffer epochs, as PPO uses, or sampling).

The current time step and policy state are carried across iterations, and the
policy state is reset wherever a time step is FIRST.

**Bootstrap row.** When training uses every step of the latest unroll
(on-policy, or whole-buffer training that clears the buffer), the last unrolled
step's successor is the environment's current time step. It is appended as an
extra row ``T`` (time step plus ``rollout_step`` info, its action not taken) so
returns and advantages of step ``T-1`` bootstrap from it; the row itself is
never trained on. (ALF instead leaves the last step of each unroll with a zero
advantage, wasting 1/T of the data.)
"""

from __future__ import annotations

import functools

import torch

import alf.nest as nest
import alf.summary
from alf.algorithms.algorithm import Algorithm, reset_state_if_necessary
from alf.algorithms.data_transformer import (
    DataTransformer,
    IdentityDataTransformer,
    prenormalizing,
    statistics_frozen,
)
from alf.data_structures import AlgStep, Experience, LossInfo, StepType, TimeStep
from alf.metrics import EpisodeMetrics
from alf.tensor_specs import TensorSpec, zeros_from_spec
from alf.utils.device import to_device


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

    is_on_policy = False

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
        transformer = getattr(config, "data_transformer", None)
        if transformer is None:
            transformer = IdentityDataTransformer(observation_spec)
        self._data_transformer: DataTransformer = transformer
        self._current_time_step = None
        self._current_policy_state = None
        self._current_transform_state = None
        self._metrics = EpisodeMetrics(env.batch_size) if env is not None else None

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

    @property
    def metrics(self) -> EpisodeMetrics | None:
        """Episode metrics of the training environment (raw rewards)."""
        return self._metrics

    @property
    def env(self):
        return self._env

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

    def stop_training_epochs(self) -> bool:
        """Return True to end this iteration's remaining updates (e.g. PPO KL early stop)."""
        return False

    # -- unroll --------------------------------------------------------------

    def _ensure_started(self) -> None:
        if self._current_time_step is None:
            if self._env is None:
                raise RuntimeError(f"{self._name} has no environment to unroll")
            batch_size = self._env.batch_size
            self._current_time_step = self._env.reset()
            self._initial_rollout_state = to_device(self.get_initial_rollout_state(batch_size))
            self._current_policy_state = self._initial_rollout_state
            self._current_transform_state = zeros_from_spec(
                self._data_transformer.state_spec, batch_size
            )

    def _policy_step(self, time_step: TimeStep, policy_state, transform_state):
        """Transform ``time_step`` and run ``rollout_step`` on it (no env interaction)."""
        transformed, transform_state = self._data_transformer.transform_timestep(
            time_step, transform_state
        )
        transformed = to_device(transformed)
        if self.is_stateful("rollout"):
            policy_state = reset_state_if_necessary(
                policy_state, self._initial_rollout_state, transformed.step_type == StepType.FIRST
            )
        policy_step = self.rollout_step(transformed, policy_state)
        return transformed, policy_state, policy_step, transform_state

    def restart_environment(self, seed: int) -> None:
        """Reseed the training env; the next unroll starts new episodes from ``reset()``."""
        self._env.seed(seed)
        self._current_time_step = None

    @torch.inference_mode()
    def unroll(self, unroll_length: int) -> list[Experience]:
        """Step the training environment ``unroll_length`` times with ``rollout_step``.

        Runs in ``torch.inference_mode`` (no autograd, no version counters or view
        tracking: about 7% faster than ``no_grad`` for small networks). The tensors it
        makes are inference tensors: training uses copies of them (the replay buffer's
        storage, or ``stack_nests`` of the unroll), never the tensors themselves; what
        outlives the unroll (the current time step and policy state) is only read or
        replaced afterwards, since updating it in place outside inference mode raises.

        Returns:
            the list of per-step ``Experience`` ``[B, ...]`` built by
            ``_make_experience`` (what is kept depends on on/off-policy).
        """
        self._ensure_started()
        time_step = self._current_time_step
        policy_state = self._current_policy_state
        transform_state = self._current_transform_state
        experiences = []
        for _ in range(unroll_length):
            transformed, policy_state, policy_step, transform_state = self._policy_step(
                time_step, policy_state, transform_state
            )
            action = policy_step.output
            next_time_step = self._env.step(_to_cpu(action))
            self._metrics(time_step)
            experiences.append(
                self._make_experience(time_step, transformed, policy_step, policy_state)
            )
            time_step = next_time_step
            policy_state = policy_step.state
        self._current_time_step = time_step
        self._current_policy_state = policy_state
        self._current_transform_state = transform_state
        return experiences

    def _make_experience(self, time_step, transformed, policy_step, policy_state) -> Experience:
        """What one unroll step contributes (on-policy: the transformed time step)."""
        return Experience(
            time_step=transformed,
            action=policy_step.output,
            rollout_info=policy_step.info,
            state=policy_state,
        )

    @torch.no_grad()
    def bootstrap_experience(self, raw: bool = False) -> Experience:
        """The bootstrap row: the current time step with its rollout info (see module doc).

        Args:
            raw: keep the raw time step (for replayed data, transformed later)
                instead of the transformed one.
        """
        self._ensure_started()
        with statistics_frozen(self._data_transformer):  # counted when the next unroll starts
            transformed, policy_state, policy_step, _ = self._policy_step(
                self._current_time_step, self._current_policy_state, self._current_transform_state
            )
        return Experience(
            time_step=self._current_time_step if raw else transformed,
            action=policy_step.output,
            rollout_info=policy_step.info,
            state=policy_state,
        )

    @torch.inference_mode()
    def prenormalize(self, num_steps: int) -> int:
        """Initialize the data transformers' statistics before training.

        Steps every training env ``num_steps`` times with ``rollout_step`` of the
        current (initial) policy, with every statistics transformer updating in
        ``transform_timestep`` (``prenormalizing``). Nothing is stored or trained on.
        The steps are real environment interaction: the episode metrics count them
        (``EnvironmentSteps``) and so does the returned number. The environments are
        then reset, so training starts from fresh episodes (the episodes cut short are
        not counted as finished).

        Args:
            num_steps: steps per environment.

        Returns:
            the number of environment steps taken (``num_steps * batch_size``).
        """
        self._ensure_started()
        time_step = self._current_time_step
        policy_state = self._current_policy_state
        transform_state = self._current_transform_state
        with prenormalizing(self._data_transformer):
            for _ in range(num_steps):
                _, policy_state, policy_step, transform_state = self._policy_step(
                    time_step, policy_state, transform_state
                )
                next_time_step = self._env.step(_to_cpu(policy_step.output))
                self._metrics(time_step)
                time_step = next_time_step
                policy_state = policy_step.state
        self._current_time_step = None  # the next unroll resets the envs
        return num_steps * self._env.batch_size

    # -- training on [T, B] experience ---------------------------------------

    def train_iter(self) -> int:
        """One training iteration; returns the number of environment steps taken."""
        if self.is_on_policy:
            steps = self._train_iter_on_policy()
        else:
            steps = self._train_iter_off_policy()
        self._data_transformer.after_train_iter()
        return steps

    def _train_iter_on_policy(self) -> int:
        raise NotImplementedError(f"{self._name} is not an on-policy algorithm")

    def _train_iter_off_policy(self) -> int:
        raise NotImplementedError(f"{self._name} is not an off-policy algorithm")

    def _temporally_independent(self) -> bool:
        flag = getattr(self._config, "temporally_independent_train_step", None)
        return (not self.is_stateful("train")) if flag is None else flag

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
        cfg = self._config
        if getattr(cfg, "use_rollout_state", False) or getattr(
            cfg, "trajectory_mini_batches", False
        ):
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

        Args:
            experience: time-major ``[T, B]`` experience on the training device.
            valid_masks: ``[T, B]`` extra mask (e.g. the bootstrap row or padding);
                LAST steps are always masked out.
        """
        with torch.enable_grad():
            info = self.train_steps(experience)
            loss_info = self.calc_loss(info)
            mask = experience.time_step.step_type != StepType.LAST
            if valid_masks is not None:
                mask = mask & valid_masks
            loss_info = self.update_with_gradient(loss_info, mask)
        self.after_update(experience, info)
        self._summarize_loss(loss_info)
        return loss_info

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


def _to_cpu(action):
    if isinstance(action, torch.Tensor) and action.is_cpu:
        return action  # the common case, without a tree walk (this runs every step)
    return nest.map_structure(lambda x: x if x.is_cpu else x.cpu(), action)
