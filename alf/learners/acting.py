"""The acting contract: ``Actor``, the ``Unroll`` it hands the learner, and ``ActorCore``,
the one policy step every actor takes.

``Actor`` is what the learner side (``RLAlgorithm.train_iter``, ``prenormalize``,
``restart_environment``, the trainer's metrics) calls to turn a policy and environments
into training data. It has two implementations:

- ``Unroller`` (``alf/learners/unroller.py``): the environments in this process;
- ``SamplerUnroller`` (``alf/samplers/remote_unroller.py``): the environments in remote
  samplers (``docs/scale_out.md``).

``ActorCore`` holds the per-env state an actor keeps between steps (the data
transformers' state, the policy state and the initial policy state) and takes the policy
step on it (``docs/design.md`` section 5): ``transform_timestep`` -> device -> policy
state reset where the step is FIRST -> policy step. The ``Unroller`` steps all its rows
with it; the samplers' ``InferenceServer`` steps the rows of the samplers in a batch
with it; both take the bootstrap row with it (``ActorCore.bootstrap``: statistics
frozen, state unchanged).
"""

from __future__ import annotations

import abc
import contextlib
from typing import NamedTuple

import torch

import alf.nest as nest
from alf.data_structures import AlgStep, Experience, StepType, TimeStep
from alf.data_transformers.base import statistics_frozen
from alf.metrics import EpisodeMetrics
from alf.tensor_specs import zeros_from_spec
from alf.utils.device import to_cpu, to_device
from alf.utils.torch_utils import reset_state_if_necessary


class Unroll(NamedTuple):
    """What an actor hands the learner for one training iteration.

    Attributes:
        experiences: one ``Experience`` ``[B, ...]`` per step, in time order
            (raw time steps on the CPU, or transformed ones on the training device;
            see ``Actor.unroll``).
        bootstrap: the bootstrap row (the current time step, its action not taken),
            or None when not asked for.
        policy_version: the version of the weights it was acted with (the training
            iteration that produced them), when the actor is a remote sampler
            (``alf.samplers``); the oldest one when its rows come from several samplers.
    """

    experiences: list
    bootstrap: Experience | None = None
    policy_version: int | None = None

    @property
    def num_env_steps(self) -> int:
        """Environment steps the unroll took (``len(experiences) * B``)."""
        if not self.experiences:
            return 0
        return len(self.experiences) * int(self.experiences[0].time_step.step_type.shape[0])


class Actor(abc.ABC):
    """Turns a policy and a batch of ``B`` environments into ``Unroll`` s.

    The time steps, policy state and transform state carry over from one ``unroll`` to
    the next, so consecutive unrolls continue the same episodes; ``restart`` starts new
    ones. Implemented by ``Unroller`` (in-process) and ``SamplerUnroller`` (remote
    samplers); ``RLAlgorithm.set_unroller`` takes either. An implementation sets
    ``_env``, ``_policy`` and ``_metrics`` when built.
    """

    _env = _policy = _metrics = None

    @property
    def env(self):
        """The batched environment (or, for remote samplers, one with their specs)."""
        return self._env

    @property
    def policy(self):
        """The ``AlgorithmPolicy`` it acts with."""
        return self._policy

    @property
    def metrics(self) -> EpisodeMetrics:
        """Episode metrics of every raw time step acted on (``[B]`` at a time)."""
        return self._metrics

    @property
    def batch_size(self) -> int:
        """``B``: the rows of every ``Experience`` of an unroll."""
        return self.env.batch_size

    @abc.abstractmethod
    def unroll(self, num_steps: int, raw: bool = False, bootstrap: bool = False) -> Unroll:
        """Take ``num_steps`` steps of every environment.

        Args:
            num_steps: steps per environment.
            raw: experiences with the raw time steps and CPU copies of action, rollout
                info and state (for a replay buffer; the learner transforms replayed
                data itself), instead of the transformed time steps on the device.
            bootstrap: also the bootstrap row (``ActorCore.bootstrap``).
        """

    def set_streams(self, seed: int, first_env_id: int = 0, domain: str = "rollout") -> None:
        """Draw the policy steps' random numbers from per-env counter-based streams
        (``alf.utils.random_streams``); an actor whose envs are elsewhere (remote samplers)
        keys its streams where they are and does nothing here."""

    @abc.abstractmethod
    def restart(self, seed: int | None = None) -> None:
        """Start new episodes at the next step; with ``seed``, reseed the environments
        (env ``i`` with ``seed + i``) and the actor's own random stream, if any."""

    @abc.abstractmethod
    def prenormalize(self, num_steps: int) -> int:
        """Step every environment ``num_steps`` times with every statistics transformer
        updating as it transforms, keeping nothing; then restart. Returns the
        environment steps taken (``num_steps * B``)."""


class PolicyStep(NamedTuple):
    """One policy step on a time step, before the environment acts on it."""

    transformed: TimeStep
    state: object  # the policy state the step was taken from (reset at FIRST)
    step: AlgStep
    transform_state: object


def policy_step(policy, time_step: TimeStep, policy_state, transform_state, initial_state):
    """Transform the raw ``time_step`` ``[B, ...]`` with ``policy``'s data transformer, move
    it to the device, reset the policy state to ``initial_state`` where it is FIRST, and
    run the policy on it (no env interaction). Returns the ``PolicyStep``."""
    transformed, transform_state = policy.data_transformer.transform_timestep(
        time_step, transform_state
    )
    transformed = to_device(transformed)
    if policy.stateful:
        policy_state = reset_state_if_necessary(
            policy_state, initial_state, transformed.step_type == StepType.FIRST
        )
    step = policy.step(transformed, policy_state)
    return PolicyStep(transformed, policy_state, step, transform_state)


def experience_of(time_step: TimeStep, taken: PolicyStep, raw: bool) -> Experience:
    """The ``Experience`` of one step: raw (CPU) or transformed (device)."""
    if raw:
        return Experience(
            time_step=time_step,
            action=to_cpu(taken.step.output),
            rollout_info=to_cpu(taken.step.info),
            state=to_cpu(taken.state),
        )
    return Experience(
        time_step=taken.transformed,
        action=taken.step.output,
        rollout_info=taken.step.info,
        state=taken.state,
    )


class ActorCore:
    """The per-env state of an actor over ``batch_size`` rows and the policy step on it.

    The state starts as the policy's initial state and zero transform state (the
    ``Unroller`` makes a new core whenever its environments reset; the inference
    server whenever the samplers restart).

    Args:
        policy: an ``AlgorithmPolicy`` (``initial_state``, ``stateful``, ``step``,
            ``data_transformer``).
        batch_size: the rows.
        streams: the rows' ``alf.utils.random_streams.ActingStreams``: each policy step
            draws from them (each row its env's counter-based stream); None: from torch's
            global generator.
    """

    def __init__(self, policy, batch_size: int, streams=None):
        self._policy = policy
        self._batch_size = batch_size
        #: the rows' random streams (``alf.utils.random_streams.ActingStreams``) or None
        self.streams = streams
        self._initial_state = policy.initial_state(batch_size)
        self._policy_state = self._initial_state
        self._transform_state = zeros_from_spec(policy.data_transformer.state_spec, batch_size)

    @property
    def batch_size(self) -> int:
        return self._batch_size

    def step(self, time_step: TimeStep, rows: torch.Tensor | None = None) -> PolicyStep:
        """The policy step on ``time_step``, which holds the rows ``rows`` (an index
        tensor; None: all rows, in order); those rows' state moves on to the step's."""
        policy = self._policy
        if rows is None:
            with self._drawing():
                taken = policy_step(
                    policy,
                    time_step,
                    self._policy_state,
                    self._transform_state,
                    self._initial_state,
                )
            self._policy_state = taken.step.state
            self._transform_state = taken.transform_state
            return taken
        device_rows = to_device(rows)
        with self._drawing(rows):
            taken = policy_step(
                policy,
                time_step,
                _take(self._policy_state, device_rows),
                _take(self._transform_state, rows),
                _take(self._initial_state, device_rows),
            )
        self._policy_state = _assign_rows(self._policy_state, device_rows, taken.step.state)
        self._transform_state = _assign_rows(self._transform_state, rows, taken.transform_state)
        return taken

    def bootstrap(self, time_step: TimeStep, raw: bool = False) -> Experience:
        """The bootstrap row: the policy step on ``time_step`` (all rows) as an
        ``Experience``, with the data transformers' statistics frozen (the next unroll
        counts the step) and the state unchanged."""
        with statistics_frozen(self._policy.data_transformer), self._drawing(advance=False):
            taken = policy_step(
                self._policy,
                time_step,
                self._policy_state,
                self._transform_state,
                self._initial_state,
            )
        return experience_of(time_step, taken, raw)

    def _drawing(self, rows=None, advance: bool = True):
        if self.streams is None:
            return contextlib.nullcontext()
        return self.streams.drawing(rows, advance)

    def reset_rows(self, rows: slice) -> None:
        """Rows ``rows`` start again from the initial states (their env was replaced)."""
        count = len(range(*rows.indices(self._batch_size)))
        zeros = zeros_from_spec(self._policy.data_transformer.state_spec, count)
        initial = nest.map_structure(lambda x: x[rows], self._initial_state)
        self._policy_state = _assign_rows(self._policy_state, rows, initial)
        self._transform_state = _assign_rows(self._transform_state, rows, zeros)


def _take(value, rows: torch.Tensor):
    return nest.map_structure(lambda x: x.index_select(0, rows), value)


def _assign_rows(value, rows, new):
    """``value`` with rows ``rows`` (an index tensor or a slice) replaced by ``new``."""

    def assign(x, y):
        x = x.clone()
        x[rows] = y.to(x.dtype)
        return x

    return nest.map_structure(assign, value, new)
