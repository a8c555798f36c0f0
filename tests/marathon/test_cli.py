"""`agentevals marathon report | compare | merge` as a user runs them (a subprocess)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from pytest_agentevals.marathon.results import Plan, read_results, trace_name

from ..conftest import run_agentevals
from ..marathon_support import TEST, line_of, result, write_results

PLAN = Plan(tuple(range(6)), thresholds={"min_pass_rate": 0.8, "max_loop_rate": 0.5})


def test_report_prints_the_verdict_table_and_fails_on_a_bar_below(tmp_path: Path) -> None:
    runs = [result(s, passed=s == 0, plan=PLAN, loop_rate=0.05) for s in range(6)]
    write_results(tmp_path / ".agentevals" / "marathons" / "results.jsonl", runs)
    done = run_agentevals("marathon", "report", cwd=tmp_path, bare_env=True)
    assert done.returncode == 1, done.stdout + done.stderr  # the default folder: marathons_dir
    out = done.stdout
    assert f"{TEST}: n=6 seeds (0-5) at c0ffee: BELOW THE BAR" in out
    assert "verified-pass rate      0.17   0.03 to 0.56" in out
    assert (
        "BELOW THE BAR: verified-pass rate = 0.17, 95% interval 0.03 to 0.56, "
        "entirely below min_pass_rate=0.8" in out
    )
    assert "seed 3 (ok): its trace is not on this machine" in out
    assert "pass^k  k=1 0.17  k=2 0.00" in out


def test_report_in_json_and_markdown(tmp_path: Path) -> None:
    runs = [result(s, passed=s != 2, plan=PLAN) for s in range(6)]
    path = write_results(tmp_path / "results.jsonl", runs)
    data = json.loads(run_agentevals("marathon", "report", path, "--json", cwd=tmp_path).stdout)
    (verdict,) = data["verdicts"]
    assert (verdict["n"], verdict["passes"], verdict["outcome"]) == (6, 5, "inconclusive")
    assert verdict["pass_hat_k"][:2] == [5 / 6, 10 / 15]
    assert verdict["estimates"]["pass_rate"]["method"] == "wilson"
    markdown = run_agentevals("marathon", "report", path, "--format", "markdown", cwd=tmp_path).stdout
    assert "| verified-pass rate | 6 | 0.83 | 0.44 to 0.97 | >= 0.80 | **INCONCLUSIVE** |" in markdown


def test_report_pools_nights_only_when_asked(tmp_path: Path) -> None:
    plan = Plan((0, 1, 2), thresholds={"min_pass_rate": 0.5})
    path = write_results(
        tmp_path / "results.jsonl",
        [result(s, commit=c, plan=plan) for c in ("aaaa", "bbbb") for s in range(3)],
    )
    separate = json.loads(run_agentevals("marathon", "report", path, "--json", cwd=tmp_path).stdout)
    assert [v["n"] for v in separate["verdicts"]] == [3, 3]
    pooled = json.loads(run_agentevals("marathon", "report", path, "--json", "--pool", cwd=tmp_path).stdout)
    (verdict,) = pooled["verdicts"]
    assert verdict["n"] == 6
    assert verdict["commits"] == ["aaaa", "bbbb"]
    assert verdict["outcome"] == "met"


def test_report_reads_a_torn_file_with_a_warning_and_names_a_bad_line(tmp_path: Path) -> None:
    path = write_results(tmp_path / "results.jsonl", [result(0), result(1)])
    with path.open("a") as handle:
        handle.write(line_of(result(2))[:50])
    done = run_agentevals("marathon", "report", path, cwd=tmp_path)
    assert done.returncode == 0
    assert "n=2 seeds" in done.stdout
    assert "warning:" in done.stderr
    assert "results.jsonl:3: the last line is incomplete" in done.stderr
    path.write_text(line_of(result(0)) + "\n{oops\n" + line_of(result(1)) + "\n")
    bad = run_agentevals("marathon", "report", path, cwd=tmp_path)
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert f"agentevals marathon: error: {path}:2: the line is not valid JSON" in bad.stderr


def _nights(tmp_path: Path, head_runs: list) -> Path:
    rng = random.Random(4)
    base = [
        result(s, commit="base1111", branch="main", auc=0.85 + rng.uniform(-0.05, 0.05)) for s in range(12)
    ]
    return write_results(tmp_path / "results.jsonl", base + head_runs)


def test_compare_finds_a_planted_regression(tmp_path: Path) -> None:
    rng = random.Random(5)
    head = [
        result(
            s,
            commit="head2222",
            branch="pr",
            passed=s >= 8,
            auc=(0.85 if s >= 8 else 0.4) + rng.uniform(-0.05, 0.05),
        )
        for s in range(12)
    ]
    path = _nights(tmp_path, head)
    done = run_agentevals("marathon", "compare", "--base", "main", "--head", "head22", path, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert f"{TEST}: 12 pair(s) (seeds 0-11), base base1111, head head2222" in out
    assert "exact McNemar p=0.00781 (8 seed(s) worse, 0 better): REGRESSED" in out
    assert "progress-AUC (mean): base" in out
    assert "REGRESSED" in out.split("progress-AUC")[1]


def test_compare_on_noise_says_what_these_runs_could_detect(tmp_path: Path) -> None:
    rng = random.Random(6)
    flips = {2: False, 7: False, 4: True}  # two seeds worse, one better: noise
    head = [
        result(s, commit="head3333", passed=flips.get(s, True), auc=0.85 + rng.uniform(-0.05, 0.05))
        for s in range(12)
    ]
    path = _nights(tmp_path, head)
    done = run_agentevals(
        "marathon", "compare", "--base", "base1111", "--head", "head3333", path, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert (
        "(2 seed(s) worse, 0 better): no difference detectable — "
        "the smallest effect these runs could detect is 0.500" in out
    )
    assert "progress-AUC (mean)" in out
    assert "no difference detectable — the smallest effect these runs could detect is 0." in out
    assert "REGRESSED" not in out
    assert "IMPROVED" not in out
    assert (
        "cost per run (mean): base $0.01, head $0.01, change +$0: no difference — every pair is the same"
        in out
    )
    data = json.loads(
        run_agentevals(
            "marathon", "compare", "--base", "base", "--head", "head3", path, "--json", cwd=tmp_path
        ).stdout
    )
    (test,) = data["tests"]
    assert test["pairs"] == 12
    assert [c["verdict"] for c in test["changes"]] == ["no difference detectable"] * 3


def test_compare_names_a_ref_it_cannot_find_or_cannot_choose(tmp_path: Path) -> None:
    path = _nights(tmp_path, [result(0, commit="base2222", branch="main")])
    missing = run_agentevals(
        "marathon", "compare", "--base", "nope", "--head", "base1111", path, cwd=tmp_path
    )
    assert missing.returncode == 2
    assert "--base nope: no marathon result names that commit" in missing.stderr
    two = run_agentevals("marathon", "compare", "--base", "main", "--head", "base1111", path, cwd=tmp_path)
    assert two.returncode == 2
    assert "--base main: names 2 commits (base1111, base2222): give one sha" in two.stderr


def test_the_nightly_lines_merge_the_jobs_and_report_the_night(tmp_path: Path) -> None:
    """The nightly workflow's own command lines: one job per seed, merged, then reported."""
    plan = Plan(tuple(range(5)), thresholds={"min_pass_rate": 0.5})
    for seed in range(5):
        folder = tmp_path / "night" / f"nightly-marathon-seed-{seed}" / ".agentevals" / "marathons"
        trace = trace_name(TEST, seed)
        (folder / trace).parent.mkdir(parents=True)
        (folder / trace).write_text("{}\n")
        write_results(folder / "results.jsonl", [result(seed, passed=seed != 3, plan=plan, trace=trace)])
    merged = run_agentevals("marathon", "merge", "night/", "--output", "night/merged", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    assert (
        "merged 5 result(s) from 5 results file(s) into night/merged/results.jsonl (5 trace(s) copied)"
        in merged.stdout
    )
    assert [r.seed for r in read_results(tmp_path / "night/merged/results.jsonl")] == [0, 1, 2, 3, 4]
    report = run_agentevals("marathon", "report", "night/merged", "--format", "markdown", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "| verified-pass rate | 5 | 0.80 | 0.38 to 0.96 | >= 0.50 | **INCONCLUSIVE** |" in report.stdout


def test_merge_refusal_is_one_clear_error(tmp_path: Path) -> None:
    write_results(tmp_path / "a" / "results.jsonl", [result(1, passed=True)])
    write_results(tmp_path / "b" / "results.jsonl", [result(1, passed=False)])
    done = run_agentevals("marathon", "merge", "a", "b", "--output", "out", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "disagree" in done.stderr
    assert "a/results.jsonl:1" in done.stderr
    assert "b/results.jsonl:1" in done.stderr
