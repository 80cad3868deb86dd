"""Tests of alf.pbt.rule.decide on hand-made populations of 2, 3, 8 and 10 members."""

from __future__ import annotations

import math
import random

import pytest

from alf.pbt.rule import CONTINUE, EXPLOIT, MUTATE_ONLY, PeerEntry, comparable_peers, decide

NAN = math.nan


def _peers(objectives: dict[int, float], env_steps: int = 1000) -> list[PeerEntry]:
    return [
        PeerEntry(i, env_steps, o, {"Adam.lr": 0.001 * (i + 1)}, f"ckpt-{i}")
        for i, o in objectives.items()
    ]


def _decide(me: int, objectives: dict[int, float], seed: int = 0, **kwargs):
    others = {i: o for i, o in objectives.items() if i != me}
    return decide(me, 1000, objectives[me], _peers(others), rng=random.Random(seed), **kwargs)


def test_population_of_two_the_worse_copies_the_better():
    objectives = {0: 1.0, 1: 10.0}
    decision = _decide(0, objectives)
    assert decision.kind == EXPLOIT and decision.source_idx == 1
    assert decision.source.hyperparameters == {"Adam.lr": 0.002}
    assert decision.source.checkpoint == "ckpt-1"
    reason = decision.reason
    assert (reason.population, reason.num_worst, reason.num_best) == (2, 1, 1)
    assert reason.gap == 9.0
    assert reason.objective_std == pytest.approx(4.5)  # population std of [1, 10]
    assert reason.std_threshold == pytest.approx(0.5 * 4.5)
    assert reason.absolute_threshold == pytest.approx(0.05 * 10.0)
    assert "copies member 1" in decision.message
    best = _decide(1, objectives)
    assert best.kind == CONTINUE and best.source is None and best.reason is None


def test_population_of_two_a_small_gap_only_mutates():
    # gap 0.4 > 0.5 * std (0.1), but not > 0.05 * |10| = 0.5
    decision = _decide(0, {0: 9.6, 1: 10.0})
    assert decision.kind == MUTATE_ONLY and decision.source is None
    assert decision.reason.candidate_idx == 1
    assert decision.reason.gap == pytest.approx(0.4)
    assert decision.reason.std_threshold == pytest.approx(0.1)
    assert decision.reason.absolute_threshold == pytest.approx(0.5)
    # the same gap passes once the absolute threshold is lowered
    assert _decide(0, {0: 9.6, 1: 10.0}, replace_threshold_frac_absolute=0.03).kind == EXPLOIT
    # and fails on the std threshold when that one is raised above the gap: 2.5 * 0.2 = 0.5
    low_abs = {"replace_threshold_frac_absolute": 0.0}
    assert _decide(0, {0: 9.6, 1: 10.0}, replace_threshold_frac_std=2.5, **low_abs).kind == (
        MUTATE_ONLY
    )


def test_population_of_three():
    objectives = {0: 5.0, 1: 7.0, 2: 6.0}
    # 3 members: worst ceil(0.375) = 1 (member 0), best ceil(0.9) = 1 (member 1)
    decision = _decide(0, objectives)
    assert decision.kind == EXPLOIT and decision.source_idx == 1
    std = math.sqrt(2.0 / 3.0)
    assert decision.reason.gap == 2.0
    assert decision.reason.objective_std == pytest.approx(std)
    assert decision.reason.std_threshold == pytest.approx(0.5 * std)
    assert decision.reason.absolute_threshold == pytest.approx(0.35)
    assert _decide(1, objectives).kind == CONTINUE
    assert _decide(2, objectives).kind == CONTINUE
    # a larger best fraction: ceil(0.5 * 3) = 2 best (members 1 and 2), drawn from both
    sources = {
        _decide(0, objectives, seed, replace_fraction_best=0.5).source_idx for seed in range(40)
    }
    assert sources == {1, 2}


OBJECTIVES_8 = {0: 3.0, 1: 10.0, 2: 7.0, 3: 1.0, 4: 8.0, 5: 2.0, 6: 9.0, 7: 4.0}
"""Ranked best first: 1 (10), 6 (9), 4 (8), 2 (7), 7 (4), 0 (3), 5 (2), 3 (1)."""


def test_population_of_eight_defaults():
    # worst ceil(0.125 * 8) = 1: member 3; best ceil(0.3 * 8) = 3: members 1, 6, 4
    for me in OBJECTIVES_8:
        if me != 3:
            assert _decide(me, OBJECTIVES_8).kind == CONTINUE, me
    mean = sum(OBJECTIVES_8.values()) / 8
    std = math.sqrt(sum((o - mean) ** 2 for o in OBJECTIVES_8.values()) / 8)
    chosen = set()
    for seed in range(60):
        decision = _decide(3, OBJECTIVES_8, seed)
        # the candidate is random.Random(seed).choice of the best fraction, best first
        expected = random.Random(seed).choice([1, 6, 4])
        assert decision.kind == EXPLOIT and decision.source_idx == expected
        assert decision.reason.gap == OBJECTIVES_8[expected] - 1.0
        assert decision.reason.objective_std == pytest.approx(std)
        assert decision.reason.std_threshold == pytest.approx(0.5 * std)
        assert decision.reason.absolute_threshold == pytest.approx(0.05 * OBJECTIVES_8[expected])
        assert (decision.reason.num_worst, decision.reason.num_best) == (1, 3)
        chosen.add(decision.source_idx)
    assert chosen == {1, 6, 4}


def test_population_of_eight_larger_worst_fraction_and_thresholds():
    # worst ceil(0.375 * 8) = 3: members 0, 5, 3
    kinds = {me: _decide(me, OBJECTIVES_8, replace_fraction_worst=0.375).kind for me in range(8)}
    assert {me for me, kind in kinds.items() if kind != CONTINUE} == {0, 5, 3}
    # std 3.2016 (of 1..10 as listed); with frac_std 1.8 the threshold is 5.763: member 0
    # (3.0) copies member 1 (gap 7) or 6 (gap 6) but only mutates when it draws 4 (gap 5)
    kinds = set()
    for seed in range(30):
        decision = _decide(
            0,
            OBJECTIVES_8,
            seed,
            replace_fraction_worst=0.375,
            replace_threshold_frac_std=1.8,
        )
        candidate = decision.reason.candidate_idx
        assert decision.kind == (EXPLOIT if candidate in (1, 6) else MUTATE_ONLY), candidate
        assert decision.reason.objective_std == pytest.approx(math.sqrt(10.25))
        assert decision.reason.std_threshold == pytest.approx(1.8 * math.sqrt(10.25))
        kinds.add(decision.kind)
    assert kinds == {EXPLOIT, MUTATE_ONLY}


def test_fractions_round_up_without_float_noise():
    objectives = {i: float(i) for i in range(10)}
    # 0.3 * 10 is 3.0000000000000004 in floats: still 3 best, not 4
    decision = _decide(0, objectives)
    assert (decision.reason.num_worst, decision.reason.num_best) == (2, 3)
    assert decision.reason.candidate_idx in (9, 8, 7)
    # the two fractions never overlap and the worst leaves at least one member
    everyone = _decide(0, {0: 1.0, 1: 2.0}, replace_fraction_worst=1.0, replace_fraction_best=1.0)
    assert (everyone.reason.num_worst, everyone.reason.num_best) == (1, 1)
    assert _decide(0, objectives, replace_fraction_worst=0.0).kind == CONTINUE


def test_only_the_newest_entry_not_ahead_of_this_member_counts():
    peers = [
        PeerEntry(1, 100, 1.0),
        PeerEntry(1, 150, 2.0),
        PeerEntry(1, 300, 100.0),  # ahead of this member: ignored
        PeerEntry(2, 250, 50.0),  # ahead: ignored, so member 2 is not comparable at all
        PeerEntry(0, 100, 99.0),  # this member's own entry: ignored
    ]
    assert {i: e.env_steps for i, e in comparable_peers(0, 200, peers).items()} == {1: 150}
    decision = decide(0, 200, 1.95, peers, rng=random.Random(0))
    # gap 0.05 exceeds 0.5 * std (0.5 * 0.025) but not 0.05 * |2.0| = 0.1
    assert decision.kind == MUTATE_ONLY and decision.reason.gap == pytest.approx(0.05)
    assert decision.reason.candidate_objective == 2.0 and decision.reason.population == 2
    # the same peers seen from further ahead: the 300-step entry counts
    ahead = decide(0, 400, 1.95, peers, rng=random.Random(0))
    assert ahead.kind == EXPLOIT and ahead.reason.candidate_objective == 100.0
    assert ahead.reason.population == 3
    # several entries at the same env steps: the last one given counts
    same = [PeerEntry(1, 100, 5.0), PeerEntry(1, 100, 7.0)]
    assert comparable_peers(0, 100, same)[1].objective == 7.0


def test_no_comparable_peer_continues():
    assert decide(0, 100, 1.0, [], rng=random.Random(0)).kind == CONTINUE
    ahead = [PeerEntry(1, 200, 100.0), PeerEntry(2, 300, 50.0)]
    decision = decide(0, 100, 1.0, ahead, rng=random.Random(0))
    assert decision.kind == CONTINUE and "no comparable peer" in decision.message


def test_nan_objectives_rank_worst_and_are_never_copied():
    # this member diverged: it ranks last and copies whatever finite member it draws
    decision = _decide(0, {0: NAN, 1: -5.0, 2: -3.0})
    assert decision.kind == EXPLOIT and decision.source_idx == 2
    assert decision.reason.gap == math.inf
    assert decision.reason.objective_std == pytest.approx(1.0)  # of the finite objectives
    # NaN peers rank below finite members (among themselves by index: 3, 0, 1, 2) and are
    # never drawn, even from a best fraction that holds them (3, 0, 1)
    objectives = {0: NAN, 1: NAN, 2: NAN, 3: 2.0}
    assert _decide(0, objectives).kind == CONTINUE
    for seed in range(20):
        decision = _decide(2, objectives, seed, replace_fraction_best=0.75)
        assert decision.reason.num_best == 3 and decision.source_idx == 3
    # a finite member with NaN peers is not in the worst fraction
    assert _decide(3, objectives).kind == CONTINUE
    # nothing finite to copy: continue
    assert _decide(0, {0: NAN, 1: NAN, 2: NAN}).kind == CONTINUE
    # a NaN peer in the worst fraction never makes a finite member be replaced
    assert _decide(1, {0: NAN, 1: 1.0, 2: 2.0}).kind == CONTINUE


def test_ties_rank_the_lower_index_higher_and_do_not_exploit():
    decision = _decide(1, {0: 5.0, 1: 5.0})
    assert decision.kind == MUTATE_ONLY and decision.reason.gap == 0.0
    assert _decide(0, {0: 5.0, 1: 5.0}).kind == CONTINUE


def test_same_seed_same_decision():
    runs = [[_decide(3, OBJECTIVES_8, seed) for seed in range(10)] for _ in range(2)]
    assert runs[0] == runs[1]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"replace_fraction_best": 0.0}, r"replace_fraction_best must be in \(0"),
        ({"replace_fraction_worst": 1.5}, r"replace_fraction_worst must be in \[0"),
        ({"replace_threshold_frac_std": -1.0}, "replace_threshold_frac_std must be in"),
        ({"replace_threshold_frac_absolute": NAN}, "replace_threshold_frac_absolute must be in"),
    ],
)
def test_bad_parameters_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _decide(0, {0: 1.0, 1: 2.0}, **kwargs)
