"""The results file: append-only lines, a torn last line tolerated, anything else malformed named by
file and line; crafted files refused; merge never loses a seed and refuses disagreeing copies."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

from pytest_agentevals.errors import MarathonError
from pytest_agentevals.marathon.merge import merge
from pytest_agentevals.marathon.results import (
    MAX_LINE_BYTES,
    TornResultsWarning,
    append_result,
    latest,
    read_results,
    trace_name,
)

from ..marathon_support import line_of, result, write_results


def test_results_round_trip_and_a_later_line_replaces_an_earlier_one(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    for seed in range(3):
        append_result(path, result(seed))
    append_result(path, result(1, passed=False))  # a rerun of seed 1 at the same commit
    read = read_results(path)
    assert [r.seed for r in read] == [0, 1, 2, 1]
    assert read[0] == result(0)
    assert read[0].source == f"{path}:1"
    kept = latest(read)
    assert [(r.seed, r.passed) for r in kept] == [(0, True), (2, True), (1, False)]


def test_a_torn_last_line_is_read_up_to_with_a_warning_and_cut_before_the_next_append(tmp_path: Path) -> None:
    path = write_results(tmp_path / "results.jsonl", [result(0), result(1)])
    with path.open("a") as handle:
        handle.write(line_of(result(2))[:100])  # a job killed mid-write
    with pytest.warns(TornResultsWarning, match=r"results.jsonl:3: the last line is incomplete"):
        assert [r.seed for r in read_results(path)] == [0, 1]
    with pytest.warns(TornResultsWarning, match="cut off a torn last line"):
        append_result(path, result(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r.seed for r in read_results(path)] == [0, 1, 3]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"v": 2}', "newer than this pytest-agentevals reads"),
        (None, "`seed` is not a seed"),
        ("trace", "climbs out"),
        ("metrics", "`metrics.verified_pass` is missing"),
    ],
)
def test_a_malformed_line_in_the_middle_names_the_file_and_line(
    tmp_path: Path, line: str | None, said: str
) -> None:
    if line is None:
        line = line_of(result(1), seed=-1)
    elif line == "trace":
        line = line_of(result(1), trace="../../etc/passwd")
    elif line == "metrics":
        line = line_of(result(1), metrics={"verified_pass": "yes"})
    path = tmp_path / "results.jsonl"
    path.write_text(line_of(result(0)) + "\n" + line + "\n" + line_of(result(2)) + "\n")
    with pytest.raises(MarathonError, match=rf"results.jsonl:2: .*{said}"):
        read_results(path)


def test_a_line_longer_than_any_result_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(line_of(result(0)).encode() + b"\n" + b"x" * (MAX_LINE_BYTES + 10) + b"\n")
    with pytest.raises(MarathonError, match=r"results.jsonl:2: the line is longer than"):
        read_results(path)


def test_a_missing_results_file_says_how_one_is_made(tmp_path: Path) -> None:
    with pytest.raises(MarathonError, match=r"no such results file.*pytest -m marathon"):
        read_results(tmp_path / "results.jsonl")


def _job(root: Path, name: str, results: list, *, traces: bool = True) -> Path:
    """A CI job's artifact as actions/download-artifact lays it out: <name>/.agentevals/marathons/."""
    folder = root / name / ".agentevals" / "marathons"
    with_traces = []
    for r in results:
        relative = trace_name(r.test, r.seed)
        if traces:
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_text(f"trace of seed {r.seed} at {r.commit}\n")
        with_traces.append(r.__class__(**{**r.__dict__, "trace": relative}))
    write_results(folder / "results.jsonl", with_traces)
    return folder


def test_merge_combines_jobs_keeps_every_seed_and_copies_traces(tmp_path: Path) -> None:
    night = tmp_path / "night"
    for seed in range(3):
        _job(night, f"nightly-marathon-seed-{seed}", [result(seed)])
    _job(night, "again-seed-1", [result(1)])  # the same result twice: kept once
    _job(night, "nightly-marathon-seed-3", [result(3)], traces=False)
    done = merge([night], night / "merged")
    merged = read_results(night / "merged" / "results.jsonl")
    assert sorted(r.seed for r in merged) == [0, 1, 2, 3]
    assert done.duplicates == 1
    for r in merged[:3]:
        assert (night / "merged" / r.trace).read_text() == f"trace of seed {r.seed} at c0ffee\n"
    assert merged[3].trace is None
    assert any("is missing" in m for m in done.missing_traces)
    # Merging again (the merged folder among the inputs, or as the output) changes nothing.
    merge([night], night / "merged")
    assert len(read_results(night / "merged" / "results.jsonl")) == 4


def test_merge_keeps_two_commits_of_one_seed_apart(tmp_path: Path) -> None:
    _job(tmp_path / "in", "monday", [result(0, commit="aaaa1111")])
    _job(tmp_path / "in", "tuesday", [result(0, commit="bbbb2222")])
    merge([tmp_path / "in"], tmp_path / "out")
    merged = read_results(tmp_path / "out" / "results.jsonl")
    assert sorted(r.commit or "" for r in merged) == ["aaaa1111", "bbbb2222"]
    texts = sorted((tmp_path / "out" / r.trace).read_text() for r in merged if r.trace)
    assert texts == ["trace of seed 0 at aaaa1111\n", "trace of seed 0 at bbbb2222\n"]


def test_merge_refuses_two_results_of_one_seed_and_commit_that_disagree(tmp_path: Path) -> None:
    _job(tmp_path / "in", "a", [result(2, passed=True)])
    _job(tmp_path / "in", "b", [result(2, passed=False)])
    with pytest.raises(
        MarathonError, match=r"two results of .* seed 2 at commit c0ffee disagree.*results.jsonl:1"
    ):
        merge([tmp_path / "in"], tmp_path / "out")
    assert not (tmp_path / "out" / "results.jsonl").exists()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_merge_never_follows_a_trace_that_is_a_link(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not a trace")
    folder = _job(tmp_path / "in", "job", [result(0)])
    trace = folder / trace_name(result(0).test, 0)
    trace.unlink()
    trace.symlink_to(secret)
    done = merge([tmp_path / "in"], tmp_path / "out")
    (merged,) = read_results(tmp_path / "out" / "results.jsonl")
    assert merged.trace is None
    assert any("is a link" in m for m in done.missing_traces)
    assert "not a trace" not in json.dumps(
        [p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file()]
    )


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_results_file_found_in_a_folder_is_not_read_through_a_link(tmp_path: Path) -> None:
    outside = write_results(tmp_path / "elsewhere" / "results.jsonl", [result(0)])
    job = tmp_path / "night" / "job"
    job.mkdir(parents=True)
    (job / "results.jsonl").symlink_to(outside)
    _job(tmp_path / "night", "real", [result(1)])
    merge([tmp_path / "night"], tmp_path / "out")
    assert [r.seed for r in read_results(tmp_path / "out" / "results.jsonl")] == [1]


def test_a_snapshot_reads_the_file_as_it_was(tmp_path: Path) -> None:
    """What an xdist worker started late reads: the file at the size it had when the session began."""
    path = write_results(tmp_path / "results.jsonl", [result(0), result(1)])
    size = path.stat().st_size
    append_result(path, result(2))
    assert [r.seed for r in read_results(path, size)] == [0, 1]
    assert [r.seed for r in read_results(path)] == [0, 1, 2]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            '{"seed": ' + "[" * 1000 + "]" * 1000 + "}",
            "the line is not valid JSON here: nested deeper than 128",
        ),
        ('{"seed": ' + "1" * 5000 + "}", "the line is not valid JSON here: a number of thousands of digits"),
    ],
)
def test_a_deep_or_huge_line_names_the_file_and_line(tmp_path: Path, line: str, said: str) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(line_of(result(0)) + "\n" + line + "\n")
    with pytest.raises(MarathonError, match=rf"results\.jsonl:2: {said}"):
        read_results(path)


@pytest.mark.parametrize("named", ["conftest.py", "tests/conftest.py", "seed-0.trace.jsonl.py"])
def test_merge_refuses_a_row_whose_trace_names_a_file_that_is_no_trace(tmp_path: Path, named: str) -> None:
    folder = tmp_path / "in" / "job" / ".agentevals" / "marathons"
    (folder / "tests").mkdir(parents=True)
    for code in ("conftest.py", "tests/conftest.py", "seed-0.trace.jsonl.py"):
        (folder / code).write_text("def pytest_configure(config):\n    raise SystemExit('ran')\n")
    write_results(folder / "results.jsonl", [result(0).__class__(**{**result(0).__dict__, "trace": named})])
    with pytest.raises(MarathonError, match=r"results\.jsonl:1.*is not a trace"):
        merge([tmp_path / "in"], tmp_path / "out")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").rglob("*.py")) == []
