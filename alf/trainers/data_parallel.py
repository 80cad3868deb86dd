"""What ``PolicyTrainer`` does differently with several learner ranks
(``alf.parallel.collectives``).

* **Seeds.** The run has one seed (``TrainerConfig.random_seed``, rank 0's when drawn);
  rank ``r`` seeds its generators and environments with ``rank_seed(seed, r)`` (rank 0
  with the seed itself, so one rank is the single-process run). Each rank logs one line
  with both (``seed_this_rank``); the run record lists them.
* **Global batch settings.** ``create_environment.num_parallel_environments`` and
  ``TrainerConfig.mini_batch_size`` are the experiment's totals: each rank gets ``1/K`` of
  them, and a total that does not divide by K is an error naming it.
* **Metrics.** Episode counts and env steps are summed over the ranks, averages are
  averaged over the ranks that finished episodes (``merged_results``).
* **RNG states.** A checkpoint holds every rank's generator states, so each rank resumes
  its own streams.
* **Stopping.** The ranks agree after every iteration on its env steps and on a stop
  signal any of them received (``agree_on_iteration``).

The run's seeds and this rank's shares are kept in ``alf.trainers.run_state.RunState``;
``TrainerConfig`` keeps the totals.
"""

from __future__ import annotations

import logging
import math

from alf.parallel import collectives
from alf.utils import seeding

_RANK_SALT = 104729


def rank_seed(seed: int, rank: int) -> int:
    """The seed of rank ``rank`` (``seed`` itself for rank 0)."""
    return seed if rank == 0 else seeding.derived_seed(seed, _RANK_SALT, rank)


def seed_this_rank(seed: int | None) -> tuple[int, int]:
    """``(the run's seed, this rank's seed)``: ``seed``, else one drawn (by rank 0 with
    several ranks, shared with the others), and ``rank_seed`` of it; seeds python, numpy
    and torch with this rank's and logs one line saying both."""
    if not collectives.is_active():
        seed = seeding.set_random_seed(seed)
        return seed, seed
    drawn = seed is None
    run_seed = shared_seed(seeding.draw_seed() if drawn else int(seed))
    rank = collectives.rank()
    own = rank_seed(run_seed, rank)
    seeding.seed_generators(own)
    logging.info(
        "Random seed: %d (%s); rank %d of %d seeds with rank_seed(%d, %d) = %d",
        run_seed,
        "no random_seed given: drawn by rank 0" if drawn else "given",
        rank,
        collectives.world_size(),
        run_seed,
        rank,
        own,
    )
    return run_seed, own


def shared_seed(seed: int | None) -> int | None:
    """Rank 0's ``seed`` on every rank (a drawn seed must be the same for all of them)."""
    if not collectives.is_active():
        return seed
    return collectives.all_gather_objects(seed)[0]


def per_rank(total: int | None, name: str) -> int | None:
    """``total / K`` for the global setting ``name``; an error when K does not divide it."""
    k = collectives.world_size()
    if total is None or k == 1:
        return total
    if total % k:
        raise ValueError(
            f"{name}={total} is the total over the {k} learner processes and must divide by {k}"
        )
    return total // k


def configured_num_envs() -> int:
    """``create_environment.num_parallel_environments`` as configured (the global total)."""
    import alf
    from alf.environments import utils  # noqa: F401  (defines the configurable)

    return int(alf.get_config_value("create_environment.num_parallel_environments"))


def merged_results(results: dict) -> dict:
    """The ranks' ``EpisodeMetrics.results()`` merged: sums of the counts, means of the
    averages over the ranks that finished an episode (same dict on every rank)."""
    if not collectives.is_active():
        return results
    gathered = collectives.all_gather_objects({k: _as_float(v) for k, v in results.items()})
    merged = {}
    for name in results:
        values = [r[name] for r in gathered if name in r]
        if name in ("EnvironmentSteps", "NumberOfEpisodes"):
            merged[name] = sum(values)
            continue
        with_episodes = [
            r[name] for r in gathered if name in r and r.get("NumberOfEpisodes", 1) > 0
        ]
        values = with_episodes or values
        merged[name] = sum(values) / len(values)
    return merged


def _as_float(value) -> float:
    import torch

    value = float(torch.as_tensor(value).float().mean())
    return value if math.isfinite(value) else 0.0


def gathered_rng_states() -> list | None:
    """Every rank's RNG states (rank order), or None for a single process."""
    if not collectives.is_active():
        return None
    return collectives.all_gather_objects(seeding.get_rng_state())


def own_rng_state(state: dict) -> dict | None:
    """This rank's RNG states from a checkpoint ``state``; None when the checkpoint was
    written by another number of ranks and this is not rank 0 (the caller reseeds)."""
    per_rank_states = state.get("rng_per_rank")
    k, r = collectives.world_size(), collectives.rank()
    if per_rank_states is not None and len(per_rank_states) == k:
        return per_rank_states[r]
    return state["rng"] if r == 0 else None


def agree_on_iteration(steps: int | None, stop_caught: bool) -> tuple[int | None, bool]:
    """What all ranks agree on at the end of an iteration: its env steps summed over the
    ranks (None when any rank abandoned it, ``steps`` None), and whether any rank received
    a stop signal (so that all of them stop after the same iteration). One process: as
    given."""
    if not collectives.is_active():
        return steps, stop_caught
    total, abandoned, stopping = collectives.sum_across_ranks(
        [steps or 0, steps is None, stop_caught]
    )
    return (None if abandoned else int(total)), stopping > 0
