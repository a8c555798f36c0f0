"""Shrink on the planted fixture: the decisive step cut down to a case of at most a tenth of the run's
steps, in at most 20 re-runs of the prefix, written as a test that fails on the flawed agent and passes
on the fixed one; a case file is loaded as untrusted data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.taskrunner import planted
from pytest_agentevals.cli import main
from pytest_agentevals.errors import LinkRefused, TriageError
from pytest_agentevals.triage import check_case, load_case, shrink, write_case

from ..conftest import REPO, run_agentevals
from .conftest import FAILING

pytest_plugins = ["pytester"]

Runs = dict[int, planted.PlantedRun]


@pytest.mark.parametrize("seed", FAILING)
def test_the_case_is_a_tenth_of_the_run_and_still_fails(planted_runs: Runs, seed: int) -> None:
    run = planted_runs[seed]
    assert run.mistake_step is not None
    shrunk = shrink(run.trace, run.mistake_step, planted.decide)
    assert shrunk.steps <= 0.1 * len(shrunk.run.steps)
    assert shrunk.tests <= 20
    assert shrunk.key.startswith("read_file(")
    assert "-notes.txt" in shrunk.key
    # The case keeps only what the decision needs: the check that passed the four-times task.
    assert shrunk.kept_steps == [run.mistake_step - 1]
    assert planted.decide(shrunk.request)[-1]["input"]["path"].endswith("-notes.txt")
    assert "-notes.txt" not in json.dumps(planted.decide_fixed(shrunk.request))


def test_the_written_test_fails_on_the_flawed_agent_and_passes_on_the_fixed_one(
    planted_runs: Runs, pytester: pytest.Pytester
) -> None:
    tmp_path = pytester.path
    run = planted_runs[FAILING[0]]
    assert run.mistake_step is not None
    shrunk = shrink(run.trace, run.mistake_step, planted.decide)
    flawed = write_case(shrunk, tmp_path, "flawed", "examples.taskrunner.planted:decide")
    write_case(shrunk, tmp_path, "fixed", "examples.taskrunner.planted:decide_fixed")
    provenance = json.loads(flawed.case.read_text())["provenance"]
    assert provenance["step"] == run.mistake_step
    assert provenance["trace"] == "flawed.original.trace.jsonl"
    assert flawed.original.read_bytes() == run.trace.read_bytes()  # the original, kept
    done = pytester.runpytest("-q", "-p", "no:cacheprovider")
    done.assert_outcomes(failed=1, passed=1)
    out = done.stdout.str()
    assert "test_triage_flawed.py::test_triage_flawed" in out
    assert "the agent made again the decision that failed flawed.original.trace.jsonl" in out


def test_the_command_writes_the_test(
    planted_runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = planted_runs[FAILING[1]]
    out = tmp_path / "tests"
    args = ["triage", "shrink", run.trace, "--step", str(run.mistake_step), "--name", "seed-13"]
    done = run_agentevals(*args, "--decide", "examples.taskrunner.planted:decide", "-o", out, cwd=REPO)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith(f"triage shrink: seed {FAILING[1]} step {run.mistake_step}: ")
    assert " -> 2 (" in first
    assert (out / "test_triage_seed_13.py").is_file()
    # The refusals, in-process (the same main, the same words on stderr).
    words = [str(arg) for arg in args]
    assert main([*words, "--decide", "examples.taskrunner.planted:decide", "-o", str(out)]) == 2
    assert "already there; choose another --name, or --force" in capsys.readouterr().err
    assert main([*words, "--decide", "examples.nope:decide", "-o", str(out)]) == 2
    assert "--decide 'examples.nope:decide': cannot import examples.nope" in capsys.readouterr().err


def test_a_decision_the_agent_does_not_make_again_is_refused(planted_runs: Runs) -> None:
    run = planted_runs[FAILING[0]]
    assert run.mistake_step is not None
    with pytest.raises(TriageError, match=r"the agent does not decide read_file.* again"):
        shrink(run.trace, run.mistake_step, planted.decide_fixed)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not valid JSON"),
        ("[" * 500 + "]" * 500, "nested deeper than"),
        ('{"kind": "something-else"}', "not a triage step case"),
        ('{"kind": "triage-step-case", "v": 99}', "case version 99"),
        ('{"kind": "triage-step-case", "v": 1, "request": []}', "'request' is missing or not a mapping"),
    ],
)
def test_a_crafted_case_is_refused_by_name(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "x.triage.json"
    path.write_text(text)
    with pytest.raises(TriageError, match=problem) as caught:
        load_case(path)
    assert str(path) in str(caught.value)
    with pytest.raises(TriageError):
        check_case(path, planted.decide)  # the agent is never asked on a bad case


def test_names_are_checked_before_anything_is_written(planted_runs: Runs, tmp_path: Path) -> None:
    run = planted_runs[FAILING[0]]
    assert run.mistake_step is not None
    shrunk = shrink(run.trace, run.mistake_step, planted.decide)
    with pytest.raises(TriageError, match="use letters, digits"):
        write_case(shrunk, tmp_path, "../escape", "examples.taskrunner.planted:decide")
    with pytest.raises(TriageError, match="module:function"):
        write_case(shrunk, tmp_path, "ok", "os; import sys")
    assert list(tmp_path.iterdir()) == []


def test_nothing_is_written_through_a_link(planted_runs: Runs, tmp_path: Path) -> None:
    run = planted_runs[FAILING[0]]
    assert run.mistake_step is not None
    shrunk = shrink(run.trace, run.mistake_step, planted.decide)
    outside = tmp_path / "outside.jsonl"
    out = tmp_path / "tests"
    out.mkdir()
    (out / "x.original.trace.jsonl").symlink_to(outside)  # a dangling link, as a pull request may hold
    with pytest.raises(TriageError, match="already there"):
        write_case(shrunk, out, "x", "examples.taskrunner.planted:decide")
    with pytest.raises(LinkRefused, match="is a symbolic link"):
        write_case(shrunk, out, "x", "examples.taskrunner.planted:decide", force=True)
    assert not outside.exists()
