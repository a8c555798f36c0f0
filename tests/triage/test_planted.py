"""The planted fixture is what the triage tests take it for: the flawed seeds fail at the planted step,
the others pass, and the fixed agent passes the flawed seeds."""

from __future__ import annotations

from pathlib import Path

from examples.taskrunner import planted
from pytest_agentevals import read_trace
from tests.triage.conftest import FAILING, PASSING, TASKS


def test_flawed_seeds_fail_at_the_planted_step_and_the_others_pass(
    planted_runs: dict[int, planted.PlantedRun],
) -> None:
    for seed in FAILING:
        run = planted_runs[seed]
        assert planted.triggers(TASKS, seed)
        assert len(planted.triggers(TASKS, seed)) == 1
        assert run.status == "escalated"
        assert run.mistake_step is not None
        steps = [e for e in read_trace(run.trace) if e["type"] == "model_call"]
        # The mistake is mid-run, with harmless work before it, and the run goes on past it.
        assert 10 < run.mistake_step < len(steps)
    for seed in PASSING:
        assert planted.triggers(TASKS, seed) == []
        assert planted_runs[seed].status == "ok"
        assert planted_runs[seed].mistake_step is None


def test_the_seeds_differ_harmlessly_too(planted_runs: dict[int, planted.PlantedRun]) -> None:
    # Reads and failed first tries (fixed after the check) happen in passing and failing seeds alike.
    def calls(path: Path) -> list[str]:
        return [e["name"] for e in read_trace(path) if e["type"] == "tool_call"]

    def failed_checks(path: Path) -> int:
        return sum(1 for e in read_trace(path) if e["type"] == "verification" and not e["passed"])

    for group in (FAILING, PASSING):
        assert any("read_file" in calls(planted_runs[s].trace) for s in group)
        assert any(failed_checks(planted_runs[s].trace) for s in group)


def test_the_fixed_agent_passes_a_flawed_seed(tmp_path: Path) -> None:
    assert planted.record_run(tmp_path, FAILING[0], TASKS, blunder=False).status == "ok"
