"""The marathon's estimators against known values, its interval decisions at the edges, and its seeds."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentevals.errors import ConfigError
from pytest_agentevals.marathon import estimators
from pytest_agentevals.marathon.results import Plan
from pytest_agentevals.marathon.verdict import (
    ABOVE,
    BELOW,
    INCONCLUSIVE,
    MET,
    THRESHOLDS,
    Estimate,
    decide,
    judge,
)
from pytest_agentevals.settings.seeds import describe, extra_seeds, parse_selection, planned_seeds
from pytest_agentevals.stats import wilson

from ..marathon_support import result


def test_pass_at_k_and_pass_hat_k_of_five_runs_three_passing() -> None:
    hats = [estimators.pass_hat_k(5, 3, k) for k in range(1, 6)]
    ats = [estimators.pass_at_k(5, 3, k) for k in range(1, 6)]
    assert hats == pytest.approx([0.6, 0.3, 0.1, 0.0, 0.0])
    assert ats == pytest.approx([0.6, 0.9, 1.0, 1.0, 1.0])


def test_pass_at_k_at_the_ends_and_beyond_n() -> None:
    assert estimators.pass_at_k(4, 0, 2) == 0.0
    assert estimators.pass_hat_k(4, 0, 1) == 0.0
    assert estimators.pass_at_k(4, 4, 1) == 1.0
    assert estimators.pass_hat_k(4, 4, 4) == 1.0
    assert estimators.pass_at_k(3, 1, 4) is None
    assert estimators.pass_hat_k(3, 1, 4) is None
    with pytest.raises(ValueError):
        estimators.pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        estimators.pass_hat_k(3, 1, 0)


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_rises_and_pass_hat_k_falls_with_k(nc: tuple[int, int]) -> None:
    n, c = nc
    ats = [estimators.pass_at_k(n, c, k) or 0.0 for k in range(1, n + 1)]
    hats = [estimators.pass_hat_k(n, c, k) or 0.0 for k in range(1, n + 1)]
    assert ats[0] == pytest.approx(c / n) == pytest.approx(hats[0])
    assert all(0.0 <= value <= 1.0 for value in ats + hats)
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(ats))
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(hats))
    assert all(at >= hat - 1e-12 for at, hat in zip(ats, hats, strict=True))


def test_the_pass_rate_interval_is_the_histories_wilson_interval() -> None:
    verdict = judge("t", [result(s, passed=s < 4) for s in range(5)])
    estimate = verdict.estimates["pass_rate"]
    interval = wilson(4, 5)
    assert (estimate.value, estimate.low, estimate.high) == (0.8, interval.low, interval.high)
    assert estimate.low == pytest.approx(0.3755, abs=1e-4)
    assert estimate.high == pytest.approx(0.9638, abs=1e-4)


def test_the_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = [0.2, 0.9, 0.4, 0.7, 0.8]
    first = estimators.bootstrap(values, seed=7)
    assert first == estimators.bootstrap(values, seed=7)  # the same everywhere, every time
    assert first is not None
    assert first.low <= sum(values) / 5 <= first.high
    assert 0.2 <= first.low < first.high <= 0.9
    assert estimators.bootstrap([0.5], seed=1) is None  # one value says nothing of its spread
    assert estimators.bootstrap([0.5, 0.5, 0.5], seed=1) == estimators.Interval(0.5, 0.5)


def test_a_ratio_bootstrap_with_a_resample_without_passes_is_unbounded_above() -> None:
    interval = estimators.bootstrap_ratio([1.0, 1.0, 1.0], [1.0, 0.0, 0.0], seed=3)
    assert interval is not None
    assert interval.low == pytest.approx(1.0)
    assert math.isinf(interval.high)


def test_exact_mcnemar_known_values() -> None:
    assert estimators.mcnemar_exact(0, 0) == 1.0
    assert estimators.mcnemar_exact(6, 0) == pytest.approx(2 / 64)  # the fewest pairs that can show it
    assert estimators.mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert estimators.mcnemar_exact(3, 3) == 1.0
    assert estimators.mcnemar_exact(8, 2) == pytest.approx(2 * (1 + 10 + 45) / 1024)


def test_the_smallest_detectable_effects() -> None:
    assert estimators.smallest_detectable_pass_rate(5) is None
    assert estimators.smallest_detectable_pass_rate(12) == pytest.approx(0.5)
    differences = [0.1, -0.1, 0.1, -0.1]
    assert estimators.smallest_detectable_difference(differences) == pytest.approx(
        (estimators.Z95 + estimators.Z_POWER80) * 0.11547005 / 2, rel=1e-6
    )
    assert estimators.smallest_detectable_difference([0.3]) is None


# -- decisions on intervals, at the edges -------------------------------------------------------------------


def at_least(low: float, high: float, bar: float) -> str:
    return decide(THRESHOLDS["min_pass_rate"], bar, Estimate(0.5, low, high, "wilson", 5))


def at_most(low: float, high: float, bar: float) -> str:
    return decide(THRESHOLDS["max_loop_rate"], bar, Estimate(0.5, low, high, "bootstrap", 5))


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.2, 0.59, BELOW),  # the whole interval under the bar
        (0.2, 0.6, INCONCLUSIVE),  # touching it from below: the bar is still possible
        (0.59, 0.9, INCONCLUSIVE),  # holding it
        (0.6, 0.9, MET),  # from the bar up
        (0.6, 0.6, MET),
    ],
)
def test_a_minimum_is_judged_on_the_interval(low: float, high: float, expected: str) -> None:
    assert at_least(low, high, 0.6) == expected


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.31, 0.5, ABOVE),
        (0.3, 0.5, INCONCLUSIVE),
        (0.1, 0.31, INCONCLUSIVE),
        (0.1, 0.3, MET),
    ],
)
def test_a_maximum_is_judged_on_the_interval(low: float, high: float, expected: str) -> None:
    assert at_most(low, high, 0.3) == expected


def test_no_interval_is_inconclusive() -> None:
    assert decide(THRESHOLDS["max_mean_cost_usd"], 1.0, Estimate(None, None, None, "none", 3)) == INCONCLUSIVE


def test_one_seed_is_never_conclusive_on_a_mean() -> None:
    verdict = judge("t", [result(0, auc=0.1)], plan=Plan((0,), thresholds={"min_progress_auc": 0.9}))
    auc = verdict.estimates["progress_auc"]
    assert (auc.low, auc.high, auc.method) == (0.0, 1.0, "range")
    assert verdict.outcome == INCONCLUSIVE


def test_a_verdict_below_names_the_seeds_that_missed() -> None:
    plan = Plan(tuple(range(6)), thresholds={"min_pass_rate": 0.9, "max_loop_rate": 0.5})
    runs = [result(s, passed=s == 0, loop_rate=0.1, plan=plan) for s in range(6)]
    verdict = judge("t", runs)
    (rate, loops) = verdict.judgements
    assert (rate.verdict, rate.failed_seeds) == (BELOW, (1, 2, 3, 4, 5))
    assert loops.verdict == MET
    assert verdict.outcome == BELOW
    assert verdict.fails
    assert verdict.statuses == {"ok": 6}


def test_a_partial_verdict_below_does_not_fail() -> None:
    plan = Plan(tuple(range(6)), thresholds={"min_pass_rate": 0.9})
    verdict = judge(
        "t", [result(s, passed=False, plan=plan) for s in range(3)], expected=(0, 1, 2), partial=True
    )
    assert verdict.outcome == BELOW
    assert not verdict.fails


def test_max_seeds_grows_an_inconclusive_verdict_within_its_budget() -> None:
    plan = Plan((0, 1, 2), max_seeds=8, thresholds={"min_pass_rate": 0.5}, max_total_cost_usd=0.5)
    runs = [result(s, passed=s != 1, cost=0.1, plan=plan) for s in range(3)]
    verdict = judge("t", runs)
    assert verdict.outcome == INCONCLUSIVE
    assert verdict.grow == (3, 4)  # $0.30 spent, $0.10 a run: two more fit in $0.50
    assert any("pays for 2 more" in note for note in verdict.notes)
    unbounded = judge("t", runs, plan=Plan((0, 1, 2), max_seeds=8, thresholds={"min_pass_rate": 0.5}))
    assert unbounded.grow == (3, 4, 5, 6, 7)
    missing = judge("t", runs[:2], plan=plan)
    assert missing.missing == (2,)
    assert missing.grow == ()


def test_an_unknown_cost_is_not_zero() -> None:
    runs = [result(0), result(1, cost=0.0, unpriced=True), result(2)]
    verdict = judge("t", runs, plan=Plan((0, 1, 2), thresholds={"max_mean_cost_usd": 1.0}))
    assert verdict.estimates["cost_per_run_usd"].value is None
    assert verdict.judgements[0].verdict == INCONCLUSIVE


# -- seeds ------------------------------------------------------------------------------------------------


def test_planned_seeds() -> None:
    assert planned_seeds("w", 3) == (0, 1, 2)
    assert planned_seeds("w", [7, 11]) == (7, 11)
    assert extra_seeds((7, 11), 2) == (12, 13)
    for bad, said in [
        (0, "run nothing"),
        (-2, "run nothing"),
        ([], "empty"),
        ([1, 1], "twice"),
        (True, "not"),
    ]:
        with pytest.raises(ConfigError, match=said):
            planned_seeds("@pytest.mark.marathon(seeds=...)", bad)


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        ("3", (3,)),
        ("0-2", (0, 1, 2)),
        ("1,3,7", (1, 3)),
        ("0-1, 4", (0, 1, 4)),
        ("1/2", (0, 2, 4)),
        ("2/2", (1, 3)),
    ],
)
def test_a_selection_picks_seeds_by_value_or_by_shard(text: str, selected: tuple[int, ...]) -> None:
    assert parse_selection("--agentevals-seeds", text).select((0, 1, 2, 3, 4)) == selected


def test_a_shard_splits_any_list_of_seeds_evenly() -> None:
    seeds = (11, 42, 7, 99, 5)
    shards = [parse_selection("k", f"{i}/3").select(seeds) for i in (1, 2, 3)]
    assert sorted(s for shard in shards for s in shard) == sorted(seeds)
    assert [len(shard) for shard in shards] == [2, 2, 1]


@pytest.mark.parametrize("text", ["", "a", "3-1", "0/3", "4/3", "1-", "1/0", "-3"])
def test_a_bad_selection_names_the_option_and_the_forms(text: str) -> None:
    with pytest.raises(ConfigError, match=r"--agentevals-seeds: .*(give|write)"):
        parse_selection("--agentevals-seeds", text)


def test_seeds_as_a_person_reads_them() -> None:
    assert describe([4, 0, 1, 2, 9, 7]) == "0-2, 4, 7, 9"
    assert describe([]) == "none"
