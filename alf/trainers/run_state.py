"""``RunState``: what a training run derives at run time; its ``TrainerConfig`` stays as built.

The configuration says what the experiment is; a run derives more from it as it starts
and goes on, and keeps that here, never in the configuration:

* the seed in force (``TrainerConfig.random_seed``, or one drawn; a resumed run takes its
  checkpoint's), and this learner rank's seed (``alf.trainers.data_parallel``);
* this rank's share of the global batch settings: ``num_parallel_environments`` and
  ``mini_batch_size`` (the config's values are the totals over the learner ranks);
* the counters (iterations and env steps done), the fraction of the budget done, and
  the ``Progress`` the schedules read (``alf.utils.training_progress``).

The data transformers built from ``TrainerConfig.data_transformer_ctor`` are held by the
algorithm they were given to (``alf.algorithms.factory.create_algorithm``).
"""

from __future__ import annotations

import dataclasses

from alf.parallel import collectives
from alf.trainers import data_parallel
from alf.utils import seeding
from alf.utils.training_progress import Progress

#: the salt of the evaluation environments' seed (``seeding.derived_seed(seed, EVAL_SALT)``)
EVAL_SALT = 999


@dataclasses.dataclass
class RunState:
    """The run-time state of one training run on this learner rank.

    Attributes:
        seed: the run's seed in force.
        rank_seed: this rank's seed (``seed`` itself on rank 0).
        num_parallel_environments: this rank's training environments (None: as
            ``create_environment`` is configured, one rank).
        mini_batch_size: this rank's minibatch size (None: all, as configured).
        num_iterations: the iteration budget (0: none).
        num_env_steps: the env-step budget (0: none).
        iteration: iterations done.
        env_steps: env steps done (over all ranks).
        progress: what the schedules read; ``publish_progress`` updates it.
    """

    seed: int
    rank_seed: int
    num_parallel_environments: int | None
    mini_batch_size: int | None
    num_iterations: int
    num_env_steps: int
    iteration: int = 0
    env_steps: int = 0
    progress: Progress = dataclasses.field(default_factory=Progress)

    @classmethod
    def start(cls, config) -> RunState:
        """The state of a run of ``config`` starting on this rank: seeds python, numpy and
        torch (``data_parallel.seed_this_rank``) and splits the global batch settings
        over the learner ranks (a total that does not divide is a ``ValueError`` naming
        it)."""
        seed, rank_seed = data_parallel.seed_this_rank(config.random_seed)
        num_envs = None
        if collectives.is_active():
            num_envs = data_parallel.per_rank(
                data_parallel.configured_num_envs(), "create_environment.num_parallel_environments"
            )
        return cls(
            seed=seed,
            rank_seed=rank_seed,
            num_parallel_environments=num_envs,
            mini_batch_size=data_parallel.per_rank(
                config.mini_batch_size, "TrainerConfig.mini_batch_size"
            ),
            num_iterations=config.num_iterations,
            num_env_steps=config.num_env_steps,
        )

    @property
    def eval_seed(self) -> int:
        """The seed the evaluation environments are reseeded with before each evaluation."""
        return seeding.derived_seed(self.seed, EVAL_SALT)

    @property
    def first_env_id(self) -> int:
        """The run-wide index of this rank's first training env (rank ``r`` of ``K`` holds
        envs ``r * N/K .. (r + 1) * N/K - 1``; 0 with one rank)."""
        if self.num_parallel_environments is None:
            return 0
        return collectives.rank() * self.num_parallel_environments

    def env_restart_seed(self) -> int:
        """The training environments' seed when they restart at ``iteration`` (the same
        on every rank: env ``g`` of the run is reseeded with it plus ``g``, and its random
        stream restarts from it, wherever it runs)."""
        return seeding.derived_seed(self.seed, self.iteration)

    def adopt_seed(self, seed: int) -> bool:
        """Continue with ``seed`` (a resumed run's own); whether it differed."""
        if seed == self.seed:
            return False
        self.seed = seed
        self.rank_seed = data_parallel.rank_seed(seed, collectives.rank())
        return True

    def fraction_done(self) -> float:
        """The fraction of the budget done: the larger of the iteration and env-step
        fractions (of those budgeted)."""
        fractions = []
        if self.num_iterations > 0:
            fractions.append(self.iteration / self.num_iterations)
        if self.num_env_steps > 0:
            fractions.append(self.env_steps / self.num_env_steps)
        return max(fractions)

    def done(self) -> bool:
        """A budget is reached."""
        if self.num_iterations > 0 and self.iteration >= self.num_iterations:
            return True
        return self.num_env_steps > 0 and self.env_steps >= self.num_env_steps

    def publish_progress(self) -> None:
        """Hand the counters to ``progress`` (the trainer does it before each iteration)."""
        self.progress.update(self.iteration, self.env_steps, self.fraction_done())
