"""The sampler side: ``SamplerWorker``, what runs in each sampler process or Ray actor.

A sampler loads the run's configuration (the same conf file and command-line values
as the learner), builds its ``E`` environments with the conf's ``create_environment``
(envs ``w*E .. (w+1)*E-1`` of the learner's: ``first_env_id=w*E``, env ``g`` of the run
seeded with ``seed + g``) and answers the learner's requests one at a time, each with one reply:

==========  ===========================================  ==========================
request     payload                                      reply
==========  ===========================================  ==========================
``unroll``  num_steps, raw, bootstrap, version,          a ``SamplerUnroll`` (local)
            weights (when new), progress, actor_context
``restart`` seed (None: keep the seeds)                  None
``reset``   none                                         the raw time step [E]
``step``    the action [E] (CPU)                         the raw time step [E]
==========  ===========================================  ==========================

``unroll`` is local inference: the sampler's own copy of the algorithm (built from the
conf, on the CPU) loads the weights and data-transformer statistics of ``version``
when they come with the request, and acts one whole unroll with them, each env drawing
from its own counter-based stream (``alf.utils.random_streams``: the numbers it would
draw in the learner's process); the learner's training progress (for schedules
such as DQN's epsilon) and the algorithm's ``actor_context()`` (e.g. an off-policy
algorithm's ``initial_collect_pending``: random actions while the learner's replay buffer
fills) come with the request too.
``reset``/``step`` make the sampler a plain batch of environments for the learner's
inference server (server inference) and for prenormalization. Everything sent back is CPU tensors.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import torch

import alf.nest as nest
from alf.learners.unroller import AlgorithmPolicy, Unroller
from alf.metrics import EpisodeMetrics
from alf.utils import device as device_utils
from alf.utils.schedulers import update_progress


class SamplerSpec(NamedTuple):
    """What a sampler needs to start (picklable).

    Attributes:
        conf_args: ``(conf_file, conf_params, gin_params)`` of the run
            (``alf.utils.common.parsed_conf_args``).
        index: the sampler's index ``w``.
        num_envs: its number of environments ``E``.
        env_seed: env ``g`` of the run is seeded with ``env_seed + g``, and its random
            stream (``alf.utils.random_streams``) is keyed by ``env_seed`` and ``g``.
        inference: ``'local'`` or ``'server'``.
        first_env_id: the run-wide index ``g`` of sampler 0's first env (a learner rank's
            first env); this sampler's env ``i`` is env
            ``g = first_env_id + index * num_envs + i`` (its ``env_id`` counts from the
            rank's first: ``index * num_envs + i``).
    """

    conf_args: tuple
    index: int
    num_envs: int
    env_seed: int
    inference: str
    first_env_id: int = 0

    @property
    def run_env_id(self) -> int:
        """The run-wide index of this sampler's first env."""
        return self.first_env_id + self.index * self.num_envs


class SamplerUnroll(NamedTuple):
    """A sampler's reply to ``unroll``: its part of an ``Unroll`` and what goes with it,
    each step list stacked into one nest ``[T, E, ...]`` (one tensor per leaf to send,
    not ``T``).

    Attributes:
        experiences: the unroll's experiences ``[T, E, ...]`` (CPU tensors; env_ids are
            the run's).
        bootstrap: the bootstrap row ``[E, ...]``, or None.
        raw_time_steps: the raw time steps ``[T, E, ...]`` (for the learner's episode
            metrics), or None when the experiences hold them already (raw unrolls).
        statistics: per statistics transformer
            (``DataTransformer.take_pending_statistics``), the values its rollout updates
            collected, stacked ``[T, E, ...]`` (None when it collected none), for the
            learner to apply.
        version: the weights version it acted with.
    """

    experiences: object
    bootstrap: object
    raw_time_steps: object
    statistics: list
    version: int


def policy_weights(algorithm) -> dict:
    """CPU copies of ``algorithm``'s module state (networks and data-transformer
    statistics; no optimizer state): what a local-inference sampler loads."""
    state = torch.nn.Module.state_dict(algorithm)
    return {name: value.detach().cpu() for name, value in state.items()}


class SamplerWorker:
    """One sampler: its environments, and for local inference its policy copy.

    Args:
        spec: the ``SamplerSpec``.
    """

    def __init__(self, spec: SamplerSpec):
        from alf.environments.utils import create_environment
        from alf.utils import common

        torch.set_num_threads(1)
        common.parse_conf_file(*spec.conf_args)
        device_utils.set_device("cpu")  # samplers act on the CPU and send CPU tensors
        self._spec = spec
        self._env = create_environment(
            num_parallel_environments=spec.num_envs,
            seed=spec.env_seed + spec.first_env_id,
            first_env_id=spec.index * spec.num_envs,
        )
        self._unroller = None
        self._version = None
        if spec.inference == "local":
            self._build_policy(spec)
        self._handlers = {
            "unroll": self._on_unroll,
            "restart": self._on_restart,
            "reset": lambda payload: self._env.reset(),
            "step": lambda payload: self._env.step(payload["action"]),
        }

    def _build_policy(self, spec: SamplerSpec) -> None:
        from alf.algorithms.config import TrainerConfig
        from alf.algorithms.factory import create_algorithm

        config = TrainerConfig()
        # the policy's products at the learner's precision: PPO's rollout log-probabilities
        # are then those the learner would compute
        torch.set_float32_matmul_precision(config.matmul_precision)
        algorithm = create_algorithm(config, self._env)
        self._algorithm = algorithm
        self._seen = _TimeStepRecorder(self._env.batch_size)
        self._unroller = Unroller(AlgorithmPolicy(algorithm), self._env, metrics=self._seen)
        self._unroller.set_streams(spec.env_seed, spec.run_env_id)

    def description(self) -> dict:
        """The environments' specs (the learner builds its algorithm from them)."""
        env = self._env
        return {
            "observation_spec": env.observation_spec(),
            "action_spec": env.action_spec(),
            "reward_spec": env.reward_spec(),
            "time_step_spec": env.time_step_spec(),
            "env_info_spec": env.env_info_spec(),
            "batch_size": env.batch_size,
            "pid": os.getpid(),
        }

    def handle(self, command: str, payload: dict):
        """Serve one request (see the module doc); returns the reply."""
        handler = self._handlers.get(command)
        if handler is None:
            raise ValueError(f"sampler {self._spec.index}: unknown request {command!r}")
        return handler(payload)

    def _on_unroll(self, payload: dict) -> SamplerUnroll:
        if self._unroller is None:
            raise RuntimeError(f"sampler {self._spec.index} has no policy (inference='server')")
        if payload.get("weights") is not None:
            torch.nn.Module.load_state_dict(self._algorithm, payload["weights"])
            self._version = payload["version"]
        if self._version != payload["version"]:
            raise RuntimeError(
                f"sampler {self._spec.index} holds weights version {self._version}, "
                f"asked to act with {payload['version']}"
            )
        if "progress" in payload:
            update_progress(*payload["progress"])
        if "actor_context" in payload:
            self._algorithm.set_actor_context(payload["actor_context"])
        self._seen.time_steps = []
        unroll = self._unroller.unroll(
            payload["num_steps"], raw=payload["raw"], bootstrap=payload["bootstrap"]
        )
        pending = self._algorithm.data_transformer.take_pending_statistics()
        statistics = [_stacked(values) for values in pending]
        raw_time_steps = None if payload["raw"] else _stacked(self._seen.time_steps)
        return SamplerUnroll(
            _stacked(unroll.experiences),
            _plain(unroll.bootstrap),
            raw_time_steps,
            statistics,
            self._version,
        )

    def _on_restart(self, payload: dict) -> None:
        seed = payload.get("seed")
        if self._unroller is not None:  # reseeds env g with seed + g, and its stream
            self._unroller.restart(seed)
        elif seed is not None:
            self._env.seed(seed + self._spec.run_env_id)

    def close(self) -> None:
        self._env.close()


class _TimeStepRecorder(EpisodeMetrics):
    """The worker unroller's metrics: keeps the raw time steps it is fed (the learner
    computes the run's episode metrics from them, over all samplers' rows)."""

    def __init__(self, batch_size: int):
        super().__init__(batch_size)
        self.time_steps = []

    def __call__(self, time_step) -> None:
        self.time_steps.append(time_step)


def _stacked(steps: list):
    """The nests of ``steps`` stacked ``[T, ...]`` as plain CPU tensors (None if none)."""
    return _plain(nest.stack_nests(steps)) if steps else None


def _plain(value):
    """``value`` with every tensor a normal CPU tensor (inference-mode tensors of an
    unroll cannot be pickled as is by every transport)."""
    return nest.map_structure(
        lambda x: x.detach().cpu().clone() if isinstance(x, torch.Tensor) else x, value
    )
