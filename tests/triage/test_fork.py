"""Fork and re-drive on the planted fixture: a changed decision at the planted step recovers the run,
at a decoy (rank's own third candidate, and an early harmless step) it does not; every re-drive runs
under the run's budget, within N x (steps after k) live calls; leaving the recording is 'cannot tell'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from examples.taskrunner import planted
from pytest_agentevals import read_trace
from pytest_agentevals.cli import main
from pytest_agentevals.errors import TriageError
from pytest_agentevals.guards import Budget
from pytest_agentevals.triage import Run, fork, load_run, load_runs

from ..conftest import REPO, run_agentevals
from .conftest import FAILING, PASSING

Runs = dict[int, planted.PlantedRun]
N = 5  # 5/5 has a Wilson interval from 0.57, 0/5 one up to 0.43: either side of 0.5


@pytest.fixture(scope="module")
def flawed(planted_runs: Runs) -> tuple[Run, int, list[Run]]:
    run = planted_runs[FAILING[0]]
    assert run.mistake_step is not None
    return load_run(run.trace), run.mistake_step, load_runs(planted_runs[s].trace for s in PASSING)


def test_fixed_at_the_planted_step(flawed: tuple[Run, int, list[Run]], tmp_path: Path) -> None:
    run, k, passing = flawed
    result = fork(run, k, drive=planted.drive, model=planted.model, passing=passing, n=N, workdir=tmp_path)
    assert result.verdict == "fixed", result.line()
    assert result.line() == f"fixed at {k}: 5/5 (0.57\N{EN DASH}1.00)"
    assert result.source.startswith("seed ")  # the closest passing run's decision
    after = len(run.steps) - k + 1
    assert result.cost["live_calls"] <= N * after
    for redrive in result.redrives:
        start = next(iter(read_trace(redrive.trace)))
        assert start["budget"] == run.budget  # the guards the run was recorded under
        assert redrive.diverged is None
    assert len({redrive.live_calls for redrive in result.redrives}) > 1  # the seeds differ


def test_not_at_a_decoy(flawed: tuple[Run, int, list[Run]]) -> None:
    run, k, passing = flawed
    # Rank's third candidate for this seed: writing the task the flaw follows, two steps before it.
    decoy = k - 2
    assert run.step(decoy).calls[0].name == "write_file"
    result = fork(run, decoy, drive=planted.drive, model=planted.model, passing=passing, n=N)
    assert result.verdict == "not", result.line()
    assert result.line().startswith(f"not at {decoy}: 0/5 (0.00")
    early = fork(run, 3, drive=planted.drive, model=planted.model, passing=passing, n=2)
    assert early.recovered == 0
    assert {r.status for r in early.redrives} == {"escalated"}


def test_a_given_decision_and_another_budget(flawed: tuple[Run, int, list[Run]]) -> None:
    run, k, _ = flawed
    fixed = planted.decide_fixed(run.step(k).request)
    result = fork(run, k, drive=planted.drive, model=planted.model, replacement=fixed, n=1)
    assert result.source == "given"
    assert result.recovered == 1
    # This agent tells its model the budget left: under another budget its requests are not the
    # recorded ones, and the fork says so instead of re-driving a different run.
    other = fork(run, k, drive=planted.drive, model=planted.model, replacement=fixed, n=1,
                 budget=Budget(max_calls=k + 2))  # fmt: skip
    assert other.verdict == "cannot tell"
    assert "the budget differs from the one the run was recorded under" in other.line()
    assert other.redrives[0].model_calls == 1  # refused at the first request that differed


def test_leaving_the_recording_is_cannot_tell(flawed: tuple[Run, int, list[Run]]) -> None:
    run, k, passing = flawed

    def other_task(base_url: str, task: Any, workspace: Path) -> None:
        planted.drive(base_url, {**task, "seed": task["seed"] + 1}, workspace)

    result = fork(run, k, drive=other_task, model=planted.model, passing=passing, n=1)
    assert result.verdict == "cannot tell"
    assert result.line() == (
        f"cannot tell at {k}: no re-drive followed the recording up to it "
        "(step 1's request differs in its messages)"
    )


def test_bad_arguments_are_named(flawed: tuple[Run, int, list[Run]]) -> None:
    run, k, _ = flawed
    with pytest.raises(TriageError, match="no passing run to take a decision from"):
        fork(run, k, drive=planted.drive, model=planted.model)
    with pytest.raises(TriageError, match="not one the API returns"):
        fork(run, k, drive=planted.drive, model=planted.model, replacement=[{"type": "tool_use"}])
    with pytest.raises(TriageError, match="-n 0: re-drive at least once"):
        fork(run, k, drive=planted.drive, model=planted.model, passing=[run], n=0)


def test_the_command_prints_the_verdict_and_the_cost(
    planted_runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    run = planted_runs[FAILING[1]]
    args = ["triage", "fork", run.trace, "--step", str(run.mistake_step), "-n", "2"]
    seams = ["--drive", "examples.taskrunner.planted:drive", "--model", "examples.taskrunner.planted:model"]
    done = run_agentevals(*args, *seams, "--passing", planted_runs[PASSING[0]].trace, cwd=REPO)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(
        f"triage fork: seed {FAILING[1]} at step {run.mistake_step}, 2 re-drive(s) (seeds 0-1)"
    )
    assert lines[1] == f"  cannot tell at {run.mistake_step}: 2/2 (0.34\N{EN DASH}1.00)"  # two are too few
    assert lines[2].startswith("  cost: ")
    assert "guards: max_calls=200" in lines[2]
    assert lines[3].startswith("  seed 0: recovered (ok), ")
    assert main([str(arg) for arg in [*args, *seams, "--decision", "[1, 2]"]]) == 2  # in-process
    assert "--decision: give content blocks" in capsys.readouterr().err
