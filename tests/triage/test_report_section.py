"""A triage result in the run report: from the files rank and fork print with --json, read as
untrusted data (a crafted file is refused naming the file and the key), in the page and in the
Markdown summary, and through `agentevals report --triage`. The page itself is checked in Chromium
(tests/report/test_browser.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.taskrunner import planted
from pytest_agentevals.cli import main
from pytest_agentevals.errors import ReportError
from pytest_agentevals.report.build import build_report
from pytest_agentevals.report.triage import MAX_TRIAGE_BYTES, Forked, Ranked, load_triage
from pytest_agentevals.triage import load_runs, rank

from .conftest import FAILING, PASSING

Runs = dict[int, planted.PlantedRun]


def ranked_file(planted_runs: Runs, folder: Path) -> Path:
    ranking = rank(load_runs(run.trace for run in planted_runs.values()))
    path = folder / "rank.json"
    path.write_text(json.dumps(ranking.to_json(3)))
    return path


def test_rank_output_reads_back_and_shows_in_both_formats(planted_runs: Runs, tmp_path: Path) -> None:
    result = load_triage(ranked_file(planted_runs, tmp_path))
    assert isinstance(result, Ranked)
    assert (result.failing, result.passing) == (len(FAILING), len(PASSING))
    seed = FAILING[0]
    shown = next(run for run in result.runs if run.run == f"seed {seed}")
    assert planted_runs[seed].mistake_step in [c.step for c in shown.candidates]
    report = build_report([planted_runs[seed].trace], triage=[result])
    assert '<section id="triage"><h2>Triage</h2>' in report.html()
    markdown = report.markdown()
    assert "### Triage" in markdown
    assert f"- seed {seed} (escalated): step {planted_runs[seed].mistake_step} (1.00)" in markdown


def test_the_command_adds_the_section(
    planted_runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rank_json = ranked_file(planted_runs, tmp_path)
    page = tmp_path / "report.html"
    trace = planted_runs[FAILING[0]].trace
    assert main(["report", str(trace), "--triage", str(rank_json), "-o", str(page)]) == 0
    assert 'id="triage"' in page.read_text()
    bad = tmp_path / "bad.json"
    bad.write_text('{"verdict": "maybe"}')
    assert main(["report", str(trace), "--triage", str(bad), "-o", str(tmp_path / "no.html")]) == 2
    assert f"{bad}: verdict 'maybe': one of fixed, not, cannot tell" in capsys.readouterr().err
    assert not (tmp_path / "no.html").exists()


FORK = {
    "run": "seed 3",
    "step": 212,
    "verdict": "fixed",
    "line": "fixed at 212: 9/10 (0.60-0.98)",
    "source": "given",
    "cost": {"model_calls": 100, "live_calls": 40, "cost_usd": 0.5},
}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{nope", "not valid JSON"),
        ("[" * 300 + "]" * 300, "nested deeper than"),
        ("[]", "not a triage result"),
        (json.dumps({**FORK, "step": "212"}), "'step' is missing or not of the right type"),
        (json.dumps({**FORK, "step": True}), "'step' is missing or not of the right type"),
        (json.dumps({**FORK, "cost": {"model_calls": 1}}), "cost: 'live_calls' is missing"),
        (
            json.dumps({"failing": [], "passing": [], "runs": [{"run": 1, "candidates": []}]}),
            r"runs\[0\]: 'run' is missing",
        ),
    ],
)
def test_a_crafted_result_is_refused_by_file_and_key(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(ReportError, match=problem) as caught:
        load_triage(path)
    assert str(path) in str(caught.value)


def test_a_fork_result_and_the_size_bound(tmp_path: Path) -> None:
    path = tmp_path / "fork.json"
    path.write_text(json.dumps(FORK))
    assert load_triage(path) == Forked("seed 3", 212, "fixed", FORK["line"], "given", 100, 40, 0.5)
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(MAX_TRIAGE_BYTES + 1)
    with pytest.raises(ReportError, match="more than a triage result holds"):
        load_triage(big)
