"""Seeds a budget stopped are their own class: counted and shown, left out of the pass rates by
default (`budget_stops = "fail"` counts them as failures), and no bar is met when most were stopped."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_agentevals.marathon import render
from pytest_agentevals.marathon.results import Plan, SeedResult
from pytest_agentevals.marathon.verdict import INCONCLUSIVE, MET, judge
from pytest_agentevals.settings import Settings

from ..conftest import run_agentevals
from ..marathon_support import TEST, result, write_results

PLAN = Plan(tuple(range(5)), thresholds={"min_pass_rate": 0.4, "max_mean_cost_usd": 1.0})


def stopped(seed: int, budget: str = "max_cost_usd=0.5") -> SeedResult:
    r = result(seed, passed=False, status="budget_exhausted", plan=PLAN)
    return dataclasses.replace(r, metrics=dataclasses.replace(r.metrics, budget_stops=1, budget_stop=budget))


def night(passing: int, stopping: int) -> list[SeedResult]:
    return [result(s, plan=PLAN) for s in range(passing)] + [
        stopped(s) for s in range(passing, passing + stopping)
    ]


def test_budget_stops_are_left_out_of_the_pass_rate_and_shown() -> None:
    verdict = judge(TEST, night(3, 2))
    rate = verdict.estimates["pass_rate"]
    assert (rate.value, rate.n) == (1.0, 3)  # 3 of 3 rated seeds passed; the 2 stopped are no failure
    assert verdict.pass_at_k[0] == 1.0
    assert [j.verdict for j in verdict.judgements] == [MET, MET]
    assert verdict.judgements[0].failed_seeds == ()
    note = (
        "2 of 5 seeds stopped by budget max_cost_usd=0.5 (seed 3, 4): left out of the pass rates "
        '(budget_stops = "fail" counts them as failures)'
    )
    assert verdict.notes == (note,)
    assert f"  {note}" in render.text([verdict], lambda r: None)
    assert f"- {note}" in render.markdown([verdict], lambda r: None)
    assert all(note in row.note for row in render.verdict_rows([verdict]))
    data = verdict.to_json()
    assert data["budget_stops"] == {
        "mode": "exclude",
        "seeds": [3, 4],
        "by": {3: "max_cost_usd=0.5", 4: "max_cost_usd=0.5"},
    }
    assert [run["stopped_by_budget"] for run in data["runs"]] == [False] * 3 + [True] * 2
    # Cost still counts every seed: a stopped run's spend was spent.
    assert verdict.estimates["cost_per_run_usd"].n == 5


def test_budget_stops_fail_counts_them_as_failures() -> None:
    verdict = judge(TEST, night(3, 2), budget_stops="fail")
    rate = verdict.estimates["pass_rate"]
    assert (rate.value, rate.n) == (0.6, 5)
    assert verdict.judgements[0].verdict == INCONCLUSIVE  # Wilson 0.23..0.88 holds 0.4
    assert verdict.judgements[0].failed_seeds == (3, 4)
    assert 'counted as failures (budget_stops = "fail")' in verdict.notes[0]


def test_a_verdict_is_not_met_when_most_seeds_were_stopped() -> None:
    verdict = judge(TEST, night(2, 3))
    # The cost bar's interval alone meets it, yet 3 of 5 runs ended on a guard: nothing can be met.
    assert verdict.outcome == INCONCLUSIVE
    assert all(j.verdict != MET for j in verdict.judgements)
    cost = next(j for j in verdict.judgements if j.threshold.keyword == "max_mean_cost_usd")
    assert cost.why.startswith("3 of 5 seeds were stopped by budget (max_cost_usd=0.5)")
    text = render.text([verdict], lambda r: None)
    assert "INCONCLUSIVE: cost per run (mean)" in text
    assert "but 3 of 5 seeds were stopped by budget (max_cost_usd=0.5)" in text
    # Every seed stopped: no pass rate at all, and still never met.
    everything = judge(TEST, night(0, 5))
    assert everything.estimates["pass_rate"].value is None
    assert everything.outcome == INCONCLUSIVE


def test_the_setting_is_checked_and_reaches_the_command(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="budget_stops='sometimes'"):
        judge(TEST, night(3, 2), budget_stops="sometimes")
    assert Settings.resolve(tmp_path, pyproject={"budget_stops": "fail"}, environ={}).budget_stops == "fail"
    path = write_results(tmp_path / "results.jsonl", night(3, 2))
    default = json.loads(run_agentevals("marathon", "report", path, "--json", cwd=tmp_path).stdout)
    assert default["verdicts"][0]["estimates"]["pass_rate"]["n"] == 3
    done = run_agentevals("marathon", "report", path, "--json", "--budget-stops", "fail", cwd=tmp_path)
    assert json.loads(done.stdout)["verdicts"][0]["estimates"]["pass_rate"]["n"] == 5
    bad = run_agentevals("marathon", "report", path, "--budget-stops", "never", cwd=tmp_path)
    assert bad.returncode == 2
    assert "--budget-stops" in bad.stderr
    assert "exclude" in bad.stderr
