"""``SamplerConfig``: where the training actor runs (``docs/scale_out.md``).

By default (``num_samplers=0``, or ``backend=None``) the training actor is the
in-process ``Unroller`` and nothing here is used. With ``num_samplers=S`` the actor
runs in ``S`` sampler workers, each stepping ``envs_per_sampler=E`` environments of
its own (envs ``w*E .. (w+1)*E-1`` of the run, seeded as in-process), and the
learner receives the same ``Unroll`` it would get from the in-process unroller.
"""

from __future__ import annotations

import dataclasses

import alf

BACKENDS = ("processes", "ray")
INFERENCES = ("local", "server")


@alf.configurable
@dataclasses.dataclass
class SamplerConfig:
    """Configuration of the remote samplers (see ``docs/scale_out.md``).

    Attributes:
        backend: ``'processes'`` (multiprocessing on this machine, the default) or
            ``'ray'`` (Ray actors; ``pip install alf[ray]``); None: no samplers.
        num_samplers: number of sampler workers ``S``; 0 (default): the training actor
            stays in the learner's process (today's behaviour, bit-identical).
        envs_per_sampler: environments per sampler ``E``; None:
            ``create_environment.num_parallel_environments / num_samplers``. Either way
            ``S * E`` must equal ``create_environment.num_parallel_environments``.
        inference: ``'local'`` (each sampler holds a copy of the policy, updated with
            versioned weights and data-transformer statistics after every training
            iteration, and acts a whole unroll with one version) or ``'server'`` (the
            samplers only step environments; an inference server in the learner process
            batches their time steps and runs ``rollout_step`` on them).
        max_policy_lag: how many versions older than the learner's newest an unroll may
            be. 0: synchronous (every unroll acted with the newest weights: exactly the
            in-process algorithm). With ``> 0`` (replay learners only: SAC, DDPG/TD3,
            DQN) local-inference samplers start their next unroll while the learner
            trains; older unrolls are dropped and counted.
        max_batch_size: server inference: run ``rollout_step`` as soon as this many
            rows are waiting (None: all ``S * E`` rows).
        batch_timeout: server inference: seconds the server waits, after the first
            time step of a batch came in, for the other samplers before it runs the
            rows it has (so a slow or silent sampler never holds the others back).
        timeout: seconds a sampler may stay silent when an answer is due; then it is
            killed and replaced (counted against the restart budget).
        start_timeout: seconds a sampler may take to start (build its envs and policy).
        max_restarts, restart_window: a sampler replaced more than ``max_restarts`` times
            within ``restart_window`` seconds stops the run with an error naming it.
        ray_address: ``'ray'`` backend: the address of a running Ray cluster to join
            (``ray.init(address=...)``; the log names it; left running at the end). None:
            start the run's own local cluster (``ray.init(address="local")``: node address
            127.0.0.1, no dashboard, a private temp dir), shut down and removed when the
            samplers close. A run never joins a cluster it was not given: ``RAY_ADDRESS``
            and the cluster of the last ``ray start`` on the machine are ignored.
    """

    backend: str | None = "processes"
    num_samplers: int = 0
    envs_per_sampler: int | None = None
    inference: str = "local"
    max_policy_lag: int = 0
    max_batch_size: int | None = None
    batch_timeout: float = 0.05
    timeout: float = 300.0
    start_timeout: float = 300.0
    max_restarts: int = 10
    restart_window: float = 60.0
    ray_address: str | None = None

    def __post_init__(self):
        self._check()

    @property
    def enabled(self) -> bool:
        """Whether the training actor runs in samplers (else in-process, as always)."""
        return self.backend is not None and self.num_samplers > 0

    def _check(self) -> None:
        if self.backend is not None and self.backend not in BACKENDS:
            raise ValueError(
                f"SamplerConfig.backend must be 'processes', 'ray' or None, got {self.backend!r}"
            )
        if self.inference not in INFERENCES:
            raise ValueError(
                f"SamplerConfig.inference must be 'local' or 'server', got {self.inference!r}"
            )
        _check_int(self, "num_samplers", 0)
        _check_int(self, "max_policy_lag", 0)
        _check_int(self, "max_restarts", 0)
        for name in ("envs_per_sampler", "max_batch_size"):
            if getattr(self, name) is not None:
                _check_int(self, name, 1)
        for name in ("batch_timeout", "timeout", "start_timeout", "restart_window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"SamplerConfig.{name} must be a number > 0, got {value!r}")
        if self.max_policy_lag > 0 and self.inference != "local":
            raise ValueError(
                "SamplerConfig.max_policy_lag > 0 needs inference='local' (the server acts "
                f"with the learner's weights, always the newest), got inference={self.inference!r}"
            )

    def envs_per_sampler_for(self, num_parallel_environments: int) -> int:
        """``E`` for a run of ``num_parallel_environments`` training envs; a ``ValueError``
        naming the conf keys to set when ``S * E`` cannot equal that number."""
        num = self.num_samplers
        if self.envs_per_sampler is None:
            if num_parallel_environments % num:
                raise ValueError(
                    f"SamplerConfig.num_samplers={num} does not divide "
                    f"create_environment.num_parallel_environments={num_parallel_environments}"
                    ": set SamplerConfig.envs_per_sampler, or num_parallel_environments to a "
                    "multiple of num_samplers"
                )
            return num_parallel_environments // num
        if num * self.envs_per_sampler != num_parallel_environments:
            raise ValueError(
                f"SamplerConfig.num_samplers * envs_per_sampler = {num} * "
                f"{self.envs_per_sampler} = {num * self.envs_per_sampler}, but "
                f"create_environment.num_parallel_environments = {num_parallel_environments}: "
                f"set create_environment.num_parallel_environments="
                f"{num * self.envs_per_sampler} (or envs_per_sampler=None to derive it)"
            )
        return self.envs_per_sampler


def _check_int(config: SamplerConfig, name: str, minimum: int) -> None:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"SamplerConfig.{name} must be an int >= {minimum}, got {value!r}")
