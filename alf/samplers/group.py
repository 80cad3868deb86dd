"""``create_samplers``: what ``PolicyTrainer`` builds instead of the training environment
when ``SamplerConfig`` is enabled.

The samplers are started first (each builds its environments, and for local inference
its policy copy, from the run's configuration); the learner then builds its algorithm
on a ``SamplerEnvironment`` (the samplers' specs, batch size ``S * E``, never stepped
in this process) and ``Samplers.attach`` gives the algorithm a ``SamplerUnroller`` as
its actor. Evaluation and ``play`` stay in-process.
"""

from __future__ import annotations

from alf.environments.alf_environment import AlfEnvironment
from alf.samplers.config import SamplerConfig
from alf.samplers.pool import SamplerPool
from alf.samplers.remote_unroller import SamplerUnroller


class SamplerEnvironment(AlfEnvironment):
    """The training environment as the learner sees it: the samplers' specs, with the
    batch size of all their envs; stepping it here is an error (the samplers step).

    Args:
        description: a sampler's description (``SamplerWorker.description``).
        batch_size: ``S * E``.
    """

    def __init__(self, description: dict, batch_size: int):
        super().__init__()
        self._description = description
        self._batch_size = batch_size

    @property
    def batched(self) -> bool:
        return True

    @property
    def batch_size(self) -> int:
        return self._batch_size

    def observation_spec(self):
        return self._description["observation_spec"]

    def action_spec(self):
        return self._description["action_spec"]

    def reward_spec(self):
        return self._description["reward_spec"]

    def env_info_spec(self):
        return self._description["env_info_spec"]

    def time_step_spec(self):
        return self._description["time_step_spec"]

    def _reset(self):
        raise RuntimeError("the training environments run in the samplers (SamplerConfig)")

    def _step(self, action):
        raise RuntimeError("the training environments run in the samplers (SamplerConfig)")

    def seed(self, seed: int) -> None:
        raise RuntimeError("the samplers' environments are reseeded by SamplerUnroller.restart")


class Samplers:
    """The started samplers of a run and their environment specs.

    Args:
        pool: the ``SamplerPool``.
    """

    def __init__(self, pool: SamplerPool, disconnect=None):
        self.pool = pool
        self._disconnect = disconnect
        description = pool.descriptions[0]
        self.env = SamplerEnvironment(description, pool.num_samplers * pool.num_envs)
        self.unroller = None

    def attach(self, algorithm) -> SamplerUnroller:
        """Make the samplers ``algorithm``'s actor (its ``unroller``).

        Raises:
            ValueError: ``SamplerConfig.max_policy_lag > 0`` for an algorithm whose learner
                does not train off-policy (lagged data is only valid for replay learning;
                the algorithm's ``learner_class`` says, so no algorithm class is named here).
        """
        lag = self.pool.config.max_policy_lag
        learner = getattr(algorithm, "learner_class", None)
        if lag > 0 and not (learner is not None and learner.trains_off_policy):
            raise ValueError(
                f"SamplerConfig.max_policy_lag={lag} needs an off-policy algorithm (SAC, "
                f"DDPG/TD3, DQN); {type(algorithm).__name__} trains on its own policy's "
                "data: set SamplerConfig.max_policy_lag=0"
            )
        self.unroller = SamplerUnroller(self.pool, algorithm, self.env)
        algorithm.set_unroller(self.unroller)
        return self.unroller

    def close(self) -> None:
        """Stop the samplers, and a local Ray cluster started for them (idempotent)."""
        self.pool.close()
        if self._disconnect is not None:
            self._disconnect()


def channel_class(config: SamplerConfig):
    """The backend's channel class (the Ray backend is imported only when chosen)."""
    if config.backend == "ray":
        from alf.samplers.ray_backend import RayChannel

        RayChannel.connect(config.ray_address)
        return RayChannel
    from alf.samplers.process_backend import ProcessChannel

    return ProcessChannel


def create_samplers(
    seed: int,
    config: SamplerConfig | None = None,
    num_envs: int | None = None,
    first_env_id: int = 0,
) -> Samplers | None:
    """Start the samplers ``SamplerConfig`` asks for; None when it asks for none.

    Args:
        seed: the run's random seed (the same on every learner rank).
        config: the ``SamplerConfig`` (None: the configured one).
        num_envs: the number of envs they step in all (None: the configured
            ``create_environment.num_parallel_environments``; a learner rank's share).
        first_env_id: the run-wide index of the first env (a learner rank's first).

    Raises:
        ValueError: a bad ``SamplerConfig`` (naming the key), or no conf file loaded.
    """
    import alf
    from alf.utils import common

    config = config or SamplerConfig()
    if not config.enabled:
        return None
    conf_args = common.parsed_conf_args()
    if conf_args is None:
        raise ValueError(
            "SamplerConfig.num_samplers > 0 needs the configuration loaded from a conf file "
            "(alf.bin.train --conf, or alf.utils.common.parse_conf_file) so that the samplers "
            "can load the same one"
        )
    if num_envs is None:
        num_envs = alf.get_config_value("create_environment.num_parallel_environments")
    per_sampler = config.envs_per_sampler_for(num_envs)
    channels = channel_class(config)
    try:
        pool = SamplerPool(config, conf_args, seed, per_sampler, channels, first_env_id)
    except BaseException:
        if config.backend == "ray":
            channels.disconnect()
        raise
    return Samplers(pool, channels.disconnect if config.backend == "ray" else None)
