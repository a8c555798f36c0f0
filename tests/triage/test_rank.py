"""Rank over the planted fixture's seeds: the planted step is among the top three of every failing
seed, from Python and from `agentevals triage rank` as a user reads it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from examples.taskrunner import planted
from pytest_agentevals.errors import TriageError
from pytest_agentevals.triage import load_run, load_runs, ochiai, rank, shape

from ..conftest import run_agentevals
from .conftest import FAILING, PASSING

Runs = dict[int, planted.PlantedRun]


def test_the_planted_step_is_in_the_top_three_of_every_failing_seed(planted_runs: Runs) -> None:
    ranking = rank(load_runs(run.trace for run in planted_runs.values()))
    assert sorted(run.seed for run in ranking.failing) == sorted(FAILING)
    assert sorted(run.seed for run in ranking.passing) == sorted(PASSING)
    for seed in FAILING:
        ranked = ranking.of(str(planted_runs[seed].trace))
        top = [candidate.step.number for candidate in ranked.top(3)]
        assert planted_runs[seed].mistake_step in top, (seed, top)
        planted_candidate = next(
            c for c in ranked.candidates if c.step.number == planted_runs[seed].mistake_step
        )
        # The evidence: the notes read, in every failing seed and no passing one.
        assert planted_candidate.evidence[0].failing == len(FAILING)
        assert planted_candidate.evidence[0].passing == 0
        assert "call:read_file(path=a#-a.a)" in {e.feature for e in planted_candidate.evidence}
        assert ranked.closest is not None
        assert ranked.closest.passed


def test_harmless_differences_score_low(planted_runs: Runs) -> None:
    ranking = rank(load_runs(run.trace for run in planted_runs.values()))
    for ranked in ranking.runs:
        for candidate in ranked.candidates:
            for evidence in candidate.evidence:
                if evidence.feature in {"tool:read_file", "check-failed", "compaction", "tool:write_file"}:
                    assert evidence.passing > 0
                    assert evidence.score < 1


def test_ochiai_and_shapes() -> None:
    assert ochiai(3, 0, 3) == 1.0
    assert ochiai(0, 4, 3) == 0.0
    assert math.isclose(ochiai(2, 2, 4), 2 / math.sqrt(4 * 4))
    assert shape("t007.txt") == shape("t012.txt") == "a#.a"
    assert shape("t007-notes.txt") == "a#-a.a"
    assert shape("TODO") == "A"
    assert shape("Let me look") == "a a a"
    assert shape({"n": 3, "ok": True}) == "{n=#,ok=true}"


def test_rank_needs_both_kinds_of_run(planted_runs: Runs) -> None:
    passing = [load_run(planted_runs[seed].trace) for seed in PASSING]
    with pytest.raises(TriageError, match="all 5 run\\(s\\) given are passing"):
        rank(passing)
    with pytest.raises(TriageError, match="no step 999"):
        passing[0].step(999)


def test_the_command_prints_the_candidates_with_their_evidence(planted_runs: Runs, tmp_path: Path) -> None:
    folder = planted_runs[FAILING[0]].trace.parent
    done = run_agentevals("triage", "rank", folder, "--top", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"triage rank: {len(FAILING)} failing, {len(PASSING)} passing run(s)")
    step = planted_runs[FAILING[0]].mistake_step
    assert f"seed {FAILING[0]} (escalated;" in out
    block = out.split(f"seed {FAILING[0]} (escalated;")[1].split("\n\n")[0]
    assert f" step {step} (line " in block
    assert "call:read_file(path=a#-a.a)  in 3/3 failing, 0/5 passing  (1.00)" in block
    as_json = run_agentevals("triage", "rank", folder, "--json", cwd=tmp_path)
    data = json.loads(as_json.stdout)
    assert {run["run"] for run in data["runs"]} == {f"seed {seed}" for seed in FAILING}


def test_the_command_names_a_missing_trace(tmp_path: Path) -> None:
    done = run_agentevals("triage", "rank", tmp_path / "nope.trace.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == f"agentevals triage: error: {tmp_path / 'nope.trace.jsonl'}: no such trace file or folder"
    )
