"""Verdicts only on evidence (issue 17): crafted results files that would make a verdict lie are refused
with one clear error, and `compare` / `merge` never pass having done nothing or overwritten something."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentevals.marathon.results import Plan

from ..conftest import run_agentevals
from ..marathon_support import TEST, line_of, result, write_results

PLAN = Plan((0, 1, 2), thresholds={"min_pass_rate": 0.5})


def _metrics_line(**metrics: object) -> str:
    data = result(0, plan=PLAN).to_json()
    data["metrics"].update(metrics)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("metrics", "named"),
    [
        ({"progress_auc": 5}, "metrics.progress_auc"),
        ({"cost_usd": -1.0}, "metrics.cost_usd"),
        ({"cost_usd": 1e308}, "metrics.cost_usd"),
        ({"loop_rate": 1.5}, "metrics.loop_rate"),
        ({"restarts": -3}, "metrics.restarts"),
        ({"tokens": {"input": -5}}, "metrics.tokens"),
    ],
)
def test_out_of_range_metrics_are_refused_not_judged(
    tmp_path: Path, metrics: dict[str, object], named: str
) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(_metrics_line(**metrics) + "\n", encoding="utf-8")
    done = run_agentevals("marathon", "report", path, cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert f"{path}:1: not a marathon result: `{named}`" in done.stderr
    assert "Traceback" not in done.stderr
    assert "MET" not in done.stdout.upper()


def test_a_huge_max_seeds_is_refused(tmp_path: Path) -> None:
    data = result(0, plan=PLAN).to_json()
    data["plan"]["max_seeds"] = 10**12
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")
    done = run_agentevals("marathon", "report", path, cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert "`plan.max_seeds` 1000000000000 is more than 10000" in done.stderr


def test_huge_but_finite_costs_never_traceback(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text("".join(_metrics_line(cost_usd=1.7e308) + "\n" for _ in range(2)), encoding="utf-8")
    for command in (("report", path), ("compare", "--base", path, "--head", path)):
        done = run_agentevals("marathon", *command, cwd=tmp_path)
        assert done.returncode == 2
        assert "Traceback" not in done.stderr
        assert "`metrics.cost_usd`" in done.stderr


def test_compare_with_nothing_paired_fails(tmp_path: Path) -> None:
    base = write_results(tmp_path / "base.jsonl", [result(s, commit="aaaa", plan=PLAN) for s in (0, 1)])
    head = write_results(tmp_path / "head.jsonl", [result(s, commit="bbbb", plan=PLAN) for s in (2, 3)])
    done = run_agentevals("marathon", "compare", "--base", base, "--head", head, cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert "nothing compared: no seed ran at both" in done.stderr
    assert "base seeds 0-1, head seeds 2-3" in done.stderr
    other = write_results(tmp_path / "other.jsonl", [result(0, commit="bbbb", test="t.py::other", plan=PLAN)])
    done = run_agentevals("marathon", "compare", "--base", base, "--head", other, cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert "nothing compared: no marathon test has runs at both" in done.stderr


def test_merge_never_overwrites_a_trace(tmp_path: Path) -> None:
    """Three results (different seeds, one commit) in three jobs' files naming one trace file: the
    second is renamed with the commit, the third would land on that name too."""
    for job, seed in (("a", 0), ("b", 1), ("c", 2)):
        folder = tmp_path / job
        folder.mkdir()
        (folder / "shared.trace.jsonl").write_text(f"seed {seed}\n", encoding="utf-8")
        (folder / "results.jsonl").write_text(
            line_of(result(seed, plan=PLAN), trace="shared.trace.jsonl") + "\n", encoding="utf-8"
        )
    done = run_agentevals("marathon", "merge", "a", "b", "c", "--output", "out", cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert "a/results.jsonl:1" in done.stderr
    assert "c/results.jsonl:1" in done.stderr
    assert "both name the trace 'shared.trace.jsonl'" in done.stderr
    assert not (tmp_path / "out").exists()


def test_merge_renames_a_colliding_trace_and_says_so(tmp_path: Path) -> None:
    for job, commit in (("a", "aaaa"), ("b", "bbbb")):
        folder = tmp_path / job
        folder.mkdir()
        (folder / "shared.trace.jsonl").write_text(f"{commit}\n", encoding="utf-8")
        (folder / "results.jsonl").write_text(
            line_of(result(0, commit=commit, plan=PLAN), trace="shared.trace.jsonl") + "\n", encoding="utf-8"
        )
    done = run_agentevals("marathon", "merge", "a", "b", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "renamed: b/results.jsonl:1: trace shared.trace.jsonl is another result's name" in done.stdout
    assert (tmp_path / "out" / "shared.trace.jsonl").read_text() == "aaaa\n"
    assert (tmp_path / "out" / "shared-bbbb.trace.jsonl").read_text() == "bbbb\n"
    assert TEST


HOSTILE = "\x1b[2J\x1b[1A\x1b[2K\r\x1b]8;;https://evil.example\x07FAILED\x1b]8;;\x07\u202e"


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or c == "\u202e"]


def test_report_and_compare_escape_test_ids_and_commits(tmp_path: Path) -> None:
    runs = [result(s, plan=PLAN, test="t.py::evil" + HOSTILE, commit="c0" + HOSTILE) for s in range(3)]
    path = write_results(tmp_path / "results.jsonl", runs)
    report = run_agentevals("marathon", "report", path, cwd=tmp_path)
    assert report.returncode in (0, 1), report.stderr
    assert _raw_controls(report.stdout + report.stderr) == []
    assert "t.py::evil\\x1b[2J" in report.stdout
    compare = run_agentevals("marathon", "compare", "--base", path, "--head", path, cwd=tmp_path)
    assert _raw_controls(compare.stdout + compare.stderr) == []
    assert "\\x1b[2J" in compare.stdout
