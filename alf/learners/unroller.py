"""``Unroller``: the one acting loop, the actor side of the actor/learner seam.

Every place that runs a policy in an environment goes through an ``Unroller``:
training unrolls, the bootstrap row, prenormalization, evaluation and ``play``.
One step of it is (``docs/design.md``, "The acting loop")::

    time_step (raw, CPU)
      -> data transformers (transform_timestep, with the unroller's transform state)
      -> the training device
      -> recurrent policy state reset where the step is FIRST
      -> policy step (rollout_step or predict_step)        -> AlgStep(output, state, info)
      -> action to the CPU -> env.step                      -> next time step
      -> episode metrics of the raw time step

The unroller owns the environment, the episode metrics and an ``ActorCore`` (the
data-transformer state, the policy state, and the policy step on them:
``alf/learners/acting.py``); the policy it acts with is an ``AlgorithmPolicy`` (an
algorithm's ``rollout_step`` or ``predict_step`` in this process). It is the in-process
``Actor``: a training iteration asks it for an ``Unroll`` (``unroll_length`` steps of
``Experience`` plus, when the learner needs it, the bootstrap row) and hands that to
the learner (``alf/learners/__init__.py``), which never sees the environment.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from alf.data_structures import Experience, TimeStep
from alf.data_transformers import prenormalizing
from alf.data_transformers.base import DataTransformer
from alf.learners.acting import (
    Actor,
    ActorCore,
    PolicyStep,
    Unroll,
    experience_of,
    policy_step,
)
from alf.metrics import EpisodeMetrics
from alf.utils.device import to_cpu, to_device
from alf.utils.finite import check_time_step
from alf.utils.random_streams import ActingStreams

# ``Unroll``, ``policy_step`` and ``experience_of`` live in ``acting`` (shared with the
# samplers); importable from here as before
__all__ = ["AlgorithmPolicy", "Unroll", "Unroller", "experience_of", "policy_step"]


class AlgorithmPolicy:
    """The policy an ``Unroller`` acts with: one of an algorithm's steps, in this process.

    This is the interface an actor needs from a policy: ``initial_state``,
    ``stateful``, ``step`` and the ``data_transformer`` whose statistics the
    actor applies. A policy held by another process (a versioned copy of the
    weights, or a client of a batched inference server) provides the same.

    Args:
        algorithm: an ``RLAlgorithm``.
        mode: ``'rollout'`` (``rollout_step``: sampled actions and the info
            training needs) or ``'predict'`` (``predict_step``: evaluation).
    """

    def __init__(self, algorithm, mode: str = "rollout"):
        if mode not in ("rollout", "predict"):
            raise ValueError(f"AlgorithmPolicy mode must be 'rollout' or 'predict', got {mode!r}")
        self._algorithm = algorithm
        self._mode = mode
        self.step = algorithm.rollout_step if mode == "rollout" else algorithm.predict_step
        self.stateful = algorithm.is_stateful(mode)

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def data_transformer(self) -> DataTransformer:
        return self._algorithm.data_transformer

    def initial_state(self, batch_size: int):
        """The policy state at FIRST, ``[batch_size, ...]``, on the training device."""
        if self._mode == "rollout":
            return to_device(self._algorithm.get_initial_rollout_state(batch_size))
        return to_device(self._algorithm.get_initial_predict_state(batch_size))


class Unroller(Actor):
    """Runs ``policy`` in the batched environment ``env`` (see the module doc).

    The current time step and the ``ActorCore``'s policy and transform state carry
    over from one call to the next, so consecutive unrolls continue the same episodes.

    Args:
        policy: an ``AlgorithmPolicy`` (or an object with the same interface).
        env: a batched ``AlfEnvironment``.
        metrics: the ``EpisodeMetrics`` fed with every raw time step (a new one,
            averaging the last 10 episodes, when None).
    """

    def __init__(self, policy: AlgorithmPolicy, env, metrics: EpisodeMetrics | None = None):
        self._policy = policy
        self._env = env
        self._metrics = metrics if metrics is not None else EpisodeMetrics(env.batch_size)
        self._transformer = policy.data_transformer
        self._time_step = None
        self._core = None  # the ActorCore of the episodes since the last reset
        self._env_steps = 0
        self._streams = None
        self._first_env_id = 0

    @property
    def streams(self) -> ActingStreams | None:
        """The envs' counter-based random streams (None: torch's global generator)."""
        return self._streams

    def set_streams(self, seed: int, first_env_id: int = 0, domain: str = "rollout") -> None:
        """Draw every policy step's random numbers from per-env counter-based streams
        (``alf.utils.random_streams``) seeded with ``seed``, env ``i`` being the run's env
        ``first_env_id + i``; ``restart(seed)`` then reseeds env ``i`` with
        ``seed + first_env_id + i`` and restarts the streams from ``seed``."""
        ids = np.arange(first_env_id, first_env_id + self._env.batch_size)
        self._streams = ActingStreams(seed, ids, domain)
        self._first_env_id = first_env_id
        self._core = None
        self._time_step = None

    def restart(self, seed: int | None = None) -> None:
        """Start new episodes at the next step: ``env.seed(seed)`` (when given; env ``i``
        gets ``seed + first_env_id + i``), then ``env.reset()`` when the next step is taken.

        The episodes running now are cut short and not counted as finished. With
        ``seed``, the random streams (if any) restart from it too.
        """
        if seed is not None:
            self._env.seed(seed + self._first_env_id)
            if self._streams is not None:
                self._streams.restart(seed)
        self._time_step = None

    def _ensure_started(self) -> None:
        if self._time_step is None:
            batch_size = self._env.batch_size
            self._time_step = self._env.reset()
            check_time_step(self._time_step, self._env_steps)
            self._core = ActorCore(self._policy, batch_size, self._streams)

    def _act(self) -> tuple[TimeStep, PolicyStep]:
        """One step of the loop: the policy, then ``env.step``. Returns the time step
        acted on and its policy step; the unroller moves on to the next time step.
        (The callers record the time step in the metrics.)"""
        time_step = self._time_step
        taken = self._core.step(time_step)
        self._time_step = self._env.step(to_cpu(taken.step.output))
        self._env_steps += self._env.batch_size
        check_time_step(self._time_step, self._env_steps)
        return time_step, taken

    def unroll(self, num_steps: int, raw: bool = False, bootstrap: bool = False) -> Unroll:
        """Take ``num_steps`` steps of every environment.

        The steps run in ``torch.inference_mode`` (no autograd bookkeeping: about 7%
        faster than ``no_grad`` for small networks). Their tensors are inference
        tensors: training uses copies of them (the replay buffer's storage, or
        stacked nests), never the tensors themselves.

        Args:
            num_steps: steps per environment.
            raw: keep the raw time steps with CPU copies of action, rollout info and
                state (for a replay buffer; the learner transforms replayed data
                again), instead of the transformed time steps on the device.
            bootstrap: also return the bootstrap row (``bootstrap``).

        Returns:
            the ``Unroll``.
        """
        experiences = self._steps(num_steps, raw)
        return Unroll(experiences, self.bootstrap(raw) if bootstrap else None)

    @torch.inference_mode()
    def _steps(self, num_steps: int, raw: bool) -> list:
        self._ensure_started()
        experiences = []
        for _ in range(num_steps):
            time_step, taken = self._act()
            self._metrics(time_step)
            experiences.append(experience_of(time_step, taken, raw))
        return experiences

    @torch.no_grad()
    def bootstrap(self, raw: bool = False) -> Experience:
        """The bootstrap row: the current time step with its policy step, not acted on.

        The environment does not step and the unroller's state does not change; the
        data transformers' statistics do not count the step (it is counted when the
        next unroll takes it).

        Args:
            raw: keep the raw time step instead of the transformed one (as ``unroll``).
        """
        self._ensure_started()
        return self._core.bootstrap(self._time_step, raw)

    @torch.inference_mode()
    def prenormalize(self, num_steps: int) -> int:
        """Step every environment ``num_steps`` times with every statistics transformer
        updating as it transforms (``prenormalizing``), keeping nothing; then restart.

        The steps are real environment interaction: the metrics count them, and so
        does the returned number. The episodes they leave running are cut short.

        Returns:
            the number of environment steps taken (``num_steps * B``).
        """
        self._ensure_started()
        if self._streams is not None:  # its own draws, leaving the rollout streams as they are
            self._core.streams = self._streams.sibling("prenormalize")
        with prenormalizing(self._transformer):
            for _ in range(num_steps):
                self._metrics(self._act()[0])
        self.restart()
        return num_steps * self._env.batch_size

    @torch.no_grad()
    def run_episodes(
        self,
        num_episodes: int,
        max_steps: int | None = None,
        observe: Callable[[TimeStep], None] | None = None,
    ) -> EpisodeMetrics:
        """Act until the metrics count ``num_episodes`` finished episodes.

        Args:
            num_episodes: stop as soon as this many episodes have ended (their LAST
                step is seen; it is not acted on).
            max_steps: bound on the steps taken (per environment); None: no bound.
            observe: called with every raw time step before it is acted on (e.g. to
                render a frame or report an episode).

        Returns:
            the metrics.
        """
        self._ensure_started()
        steps = 0
        while max_steps is None or steps < max_steps:
            if observe is not None:
                observe(self._time_step)
            self._metrics(self._time_step)
            if self._metrics.num_episodes >= num_episodes:
                break
            self._act()
            steps += 1
        return self._metrics
