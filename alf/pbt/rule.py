"""The PBT decision of one member, as DexPBT states it: keep training, only mutate the
hyperparameters, or copy a better member's weights (and hyperparameters) and mutate.

``decide`` is pure: it reads no file and its randomness comes from the
``random.Random`` it is given. See its docstring for the rule and the rounding.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

CONTINUE = "continue"
MUTATE_ONLY = "mutate_only"
EXPLOIT = "exploit"

DEFAULT_REPLACE_FRACTION_WORST = 0.125
DEFAULT_REPLACE_FRACTION_BEST = 0.3
DEFAULT_REPLACE_THRESHOLD_FRAC_STD = 0.5
DEFAULT_REPLACE_THRESHOLD_FRAC_ABSOLUTE = 0.05

_ROUNDING_DIGITS = 9


@dataclass(frozen=True)
class PeerEntry:
    """What one member published at some point.

    Args:
        policy_idx: the member's index in the population.
        env_steps: its environment steps when it published this entry.
        objective: its objective then (higher is better; NaN: unknown or diverged).
        hyperparameters: its hyperparameter values by ``Name.arg``.
        checkpoint: a reference to its checkpoint, opaque to the rule (a path, or the
            workspace's ``MemberEntry``).
    """

    policy_idx: int
    env_steps: int
    objective: float
    hyperparameters: Mapping[str, Any] = field(default_factory=dict)
    checkpoint: Any = None


@dataclass(frozen=True)
class Reason:
    """The numbers behind a ``mutate_only`` or ``exploit`` decision.

    Attributes:
        candidate_idx: the member drawn from the best fraction.
        candidate_objective: its objective.
        gap: ``candidate_objective - own objective`` (``inf`` when the own objective is NaN).
        objective_std: population standard deviation (ddof 0) of the finite objectives of
            the comparable population, this member included.
        std_threshold: ``replace_threshold_frac_std * objective_std``.
        absolute_threshold: ``replace_threshold_frac_absolute * |candidate_objective|``.
        population: the number of members compared, this member included.
        num_worst: the size of the worst fraction.
        num_best: the size of the best fraction.
    """

    candidate_idx: int
    candidate_objective: float
    gap: float
    objective_std: float
    std_threshold: float
    absolute_threshold: float
    population: int
    num_worst: int
    num_best: int


@dataclass(frozen=True)
class Decision:
    """The outcome of ``decide``.

    Attributes:
        kind: ``"continue"`` (train on unchanged), ``"mutate_only"`` (keep the weights,
            mutate the hyperparameters) or ``"exploit"`` (load ``source``'s checkpoint and
            hyperparameters, then mutate).
        source: the peer entry to copy (``exploit`` only, else None).
        reason: the numbers compared (``mutate_only`` and ``exploit``, else None).
        message: one human-readable line saying why.
    """

    kind: str
    source: PeerEntry | None = None
    reason: Reason | None = None
    message: str = ""

    @property
    def source_idx(self) -> int | None:
        """The policy index of the member copied (None unless ``exploit``)."""
        return None if self.source is None else self.source.policy_idx


def _fraction_count(fraction: float, n: int) -> int:
    """``ceil(fraction * n)``, a product within 1e-9 of an integer taken as that integer
    (so 0.3 * 10 gives 3, not 4)."""
    return math.ceil(round(fraction * n, _ROUNDING_DIGITS))


def comparable_peers(
    policy_idx: int, env_steps: int, peers: Iterable[PeerEntry]
) -> dict[int, PeerEntry]:
    """Each other member's newest entry with ``env_steps`` <= ``env_steps``, by policy index.

    Entries of ``policy_idx`` itself and entries newer than ``env_steps`` are ignored; of
    several entries of one member with the same env steps, the last one given counts.
    """
    newest: dict[int, PeerEntry] = {}
    for entry in peers:
        if entry.policy_idx == policy_idx or entry.env_steps > env_steps:
            continue
        known = newest.get(entry.policy_idx)
        if known is None or entry.env_steps >= known.env_steps:
            newest[entry.policy_idx] = entry
    return newest


def _ranking(members: list[PeerEntry]) -> list[PeerEntry]:
    """Best first: higher objective first, NaN last, ties by lower policy index first."""

    def key(entry):
        nan = math.isnan(entry.objective)
        return (nan, 0.0 if nan else -entry.objective, entry.policy_idx)

    return sorted(members, key=key)


def _population_std(objectives: list[float]) -> float:
    finite = [o for o in objectives if math.isfinite(o)]
    if len(finite) < 2:
        return 0.0
    mean = math.fsum(finite) / len(finite)
    return math.sqrt(math.fsum((o - mean) ** 2 for o in finite) / len(finite))


def _check_parameters(fraction_worst, fraction_best, frac_std, frac_absolute) -> None:
    checks = (
        ("replace_fraction_worst", fraction_worst, 0.0, 1.0, True),
        ("replace_fraction_best", fraction_best, 0.0, 1.0, False),
        ("replace_threshold_frac_std", frac_std, 0.0, math.inf, True),
        ("replace_threshold_frac_absolute", frac_absolute, 0.0, math.inf, True),
    )
    for name, value, low, high, low_ok in checks:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if (
            not number
            or math.isnan(value)
            or value > high
            or value < low
            or (value == low and not low_ok)
        ):
            interval = f"{'[' if low_ok else '('}{low}, {high}{']' if high < math.inf else ')'}"
            raise ValueError(f"{name} must be in {interval}, got {value!r}")


def decide(
    policy_idx: int,
    env_steps: int,
    objective: float,
    peers: Iterable[PeerEntry],
    *,
    rng: random.Random,
    replace_fraction_worst: float = DEFAULT_REPLACE_FRACTION_WORST,
    replace_fraction_best: float = DEFAULT_REPLACE_FRACTION_BEST,
    replace_threshold_frac_std: float = DEFAULT_REPLACE_THRESHOLD_FRAC_STD,
    replace_threshold_frac_absolute: float = DEFAULT_REPLACE_THRESHOLD_FRAC_ABSOLUTE,
) -> Decision:
    """Decide what member ``policy_idx`` does at the end of a PBT interval.

    The population compared is this member (with ``objective``) and, for each other
    member, its newest entry in ``peers`` with env steps <= ``env_steps``
    (``comparable_peers``); entries of this member in ``peers`` are ignored. With no
    comparable peer (a population of one) the decision is ``continue``.

    The members are ranked best first by objective; NaN objectives rank below every
    number, and ties go to the lower policy index. Of the ``n`` members,

    - the worst fraction is the last ``ceil(replace_fraction_worst * n)``, at most ``n - 1``;
    - the best fraction is the first ``ceil(replace_fraction_best * n)``, at most
      ``n - num_worst``, so the two never overlap;

    a product within 1e-9 of an integer counts as that integer before ``ceil`` (so
    ``0.3 * 10`` is 3). Rounding up means a population of 2 already has one member in
    each fraction, as in DexPBT.

    A member outside the worst fraction continues. A member in it draws a candidate
    uniformly (with ``rng``) from the best fraction, NaN objectives left out (if none is
    left it continues). With ``gap = candidate objective - own objective`` (``inf`` when
    its own objective is NaN), it exploits the candidate when ``gap`` exceeds both
    ``replace_threshold_frac_std * std`` (the population standard deviation of the
    finite objectives, this member included) and ``replace_threshold_frac_absolute *
    |candidate objective|``; otherwise the decision is ``mutate_only``.

    Args:
        policy_idx: this member's index.
        env_steps: this member's environment steps.
        objective: this member's objective (higher is better; NaN: unknown).
        peers: entries of the other members (several per member allowed).
        rng: the random number generator the candidate is drawn with.
        replace_fraction_worst: in [0, 1]; 0 never replaces anyone.
        replace_fraction_best: in (0, 1].
        replace_threshold_frac_std: >= 0.
        replace_threshold_frac_absolute: >= 0.

    Returns:
        a ``Decision``.
    Raises:
        ValueError: a parameter out of its range.
    """
    _check_parameters(
        replace_fraction_worst,
        replace_fraction_best,
        replace_threshold_frac_std,
        replace_threshold_frac_absolute,
    )
    objective = float(objective)
    me = PeerEntry(policy_idx, env_steps, objective)
    others = comparable_peers(policy_idx, env_steps, peers)
    if not others:
        return Decision(CONTINUE, message=f"member {policy_idx}: no comparable peer")
    ranked = _ranking([me, *(others[i] for i in sorted(others))])
    n = len(ranked)
    num_worst = min(_fraction_count(replace_fraction_worst, n), n - 1)
    num_best = min(_fraction_count(replace_fraction_best, n), n - num_worst)
    worst = [e.policy_idx for e in ranked[n - num_worst :]] if num_worst else []
    if policy_idx not in worst:
        return Decision(
            CONTINUE,
            message=f"member {policy_idx}: not among the worst {num_worst} of {n} ({worst})",
        )
    candidates = [e for e in ranked[:num_best] if not math.isnan(e.objective)]
    if not candidates:
        return Decision(
            CONTINUE,
            message=f"member {policy_idx}: no finite objective among the best {num_best} of {n}",
        )
    candidate = rng.choice(candidates)
    gap = math.inf if math.isnan(objective) else candidate.objective - objective
    std = _population_std([e.objective for e in ranked])
    reason = Reason(
        candidate_idx=candidate.policy_idx,
        candidate_objective=candidate.objective,
        gap=gap,
        objective_std=std,
        std_threshold=replace_threshold_frac_std * std,
        absolute_threshold=replace_threshold_frac_absolute * abs(candidate.objective),
        population=n,
        num_worst=num_worst,
        num_best=num_best,
    )
    numbers = (
        f"gap {gap:.6g}, std threshold {reason.std_threshold:.6g}, "
        f"absolute threshold {reason.absolute_threshold:.6g}"
    )
    if gap > reason.std_threshold and gap > reason.absolute_threshold:
        return Decision(
            EXPLOIT,
            source=candidate,
            reason=reason,
            message=f"member {policy_idx}: copies member {candidate.policy_idx} ({numbers})",
        )
    return Decision(
        MUTATE_ONLY,
        reason=reason,
        message=(
            f"member {policy_idx}: member {candidate.policy_idx} is not better enough to copy, "
            f"mutating only ({numbers})"
        ),
    )
