"""Flakiness history: JUnit ingest and report build, side by side with junitparser's bare parse.

    python benchmarks/flaky.py          # 1,000 files x 200 tests
    python benchmarks/flaky.py --quick  # 100 files x 200 tests

Generates pytest-shaped JUnit XML files in a temporary folder (each a CI run of one of 250 commits,
with failures, skips, reruns written as pytest-rerunfailures repeats them, and the layer properties
the plugin writes), then times, in one process:

- the floor: junitparser's own parse of every file, reading each testcase's name, classname, time
  and result (the least any JUnit consumer does);
- `agentevals flaky ingest`'s work: read, hash, parse, map ids and layers, outage check, store;
- building the flakiness report from the resulting history (and rendering it three ways).

Prints one JSON line per figure. The ratio is what to watch: ingest time over bare-parse time (wall
time, and CPU time beside it, steadier when others share the machine).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import _figures as figures  # benchmarks/: the folder of the script run
from junitparser import JUnitXml

from pytest_agentevals.history.analysis import analyze
from pytest_agentevals.history.ingest import Ingester
from pytest_agentevals.history.quarantine import Quarantine
from pytest_agentevals.history.report import markdown, text_lines, to_json
from pytest_agentevals.history.sqlite import SQLiteStore
from pytest_agentevals.settings import Settings
from pytest_agentevals.settings.layers import LAYER_NAMES

T = TypeVar("T")

TESTS_PER_FILE = 200
COMMITS = 250
CHUNK = 50  # files per turn when bare parse and ingest alternate


def _case(module: int, index: int, layer: str, outcome: str, seconds: float) -> str:
    classname = f"tests.{layer}.test_agent_{module}"
    name = f"test_decision_{index}[seed={index % 5}]"
    props = f'<properties><property name="agentevals.layer" value="{layer}" /></properties>'
    body = {
        "passed": "",
        "failed": '<failure message="assert 0.41 &gt;= 0.5">AssertionError: progress too low</failure>',
        "skipped": '<skipped type="pytest.skip" message="nightly only" />',
        "error": '<error message="fixture failed">RuntimeError: sandbox unavailable</error>',
    }[outcome]
    return f'<testcase classname="{classname}" name="{name}" time="{seconds:.3f}">{props}{body}</testcase>'


def generate(folder: Path, files: int, seed: int = 1) -> list[tuple[Path, str, str]]:
    """`files` JUnit files: (path, commit sha, run id) each."""
    rng = random.Random(seed)
    flaky = set(rng.sample(range(TESTS_PER_FILE), 12))  # tests that fail now and then
    out = []
    for number in range(files):
        commit = f"{number % COMMITS:040x}"
        cases = []
        failures = errors = skipped = 0
        for index in range(TESTS_PER_FILE):
            layer = LAYER_NAMES[index % len(LAYER_NAMES)]
            module = index // 20
            seconds = rng.uniform(0.001, 2.0)
            if index % 50 == 7:
                outcome = "skipped"
                skipped += 1
            elif index in flaky and rng.random() < 0.15:
                # A rerun: pytest-rerunfailures writes the rerun attempt as an empty record first.
                cases.append(_case(module, index, layer, "passed", seconds))
                outcome = "failed" if rng.random() < 0.3 else "passed"
            elif index % 97 == 3 and rng.random() < 0.05:
                outcome = "error"
                errors += 1
            else:
                outcome = "passed"
            failures += outcome == "failed"
            cases.append(_case(module, index, layer, outcome, seconds))
        xml = (
            '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">'
            f'<testsuite name="pytest" errors="{errors}" failures="{failures}" skipped="{skipped}" '
            f'tests="{TESTS_PER_FILE}" time="123.456" timestamp="2026-01-01T00:00:00" hostname="ci">'
            + "".join(cases)
            + "</testsuite></testsuites>"
        )
        path = folder / f"run{number:04d}" / "junit.xml"
        path.parent.mkdir(parents=True)
        path.write_text(xml, encoding="utf-8")
        out.append((path, commit, f"run-{number}"))
    return out


def bare_parse(paths: list[Path]) -> int:
    """junitparser's own parse: every file, every testcase's name, classname, time and result."""
    seen = 0
    for path in paths:
        for suite in JUnitXml.fromfile(str(path)):
            for case in suite:
                _ = (case.name, case.classname, case.time, case.result)
                seen += 1
    return seen


def timed(action: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def timed_cpu(action: Callable[[], T]) -> tuple[float, float, T]:
    """Wall and CPU seconds: CPU time is steadier when others share the machine."""
    start, cpu = time.perf_counter(), time.process_time()
    result = action()
    return time.perf_counter() - start, time.process_time() - cpu, result


emit = partial(figures.emit, "flaky")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 files instead of 1,000")
    args = parser.parse_args(argv)
    files = 100 if args.quick else 1000
    case = f"{files} files x {TESTS_PER_FILE} tests"
    with tempfile.TemporaryDirectory(prefix="agentevals-bench-") as tmp:
        root = Path(tmp)
        runs = generate(root / "results", files)
        paths = [path for path, _, _ in runs]
        bare_parse(paths[:20])  # warm imports and the file cache alike for both sides
        store = SQLiteStore(root / "history.sqlite")
        ingester = Ingester(store, root)

        def ingest(chunk: list[tuple[Path, str, str]]) -> int:
            return sum(ingester.ingest([path], sha=sha, run_id=run).attempts for path, sha, run in chunk)

        # Side by side: the two alternate chunk by chunk, so a busy machine slows both alike.
        bare_seconds = ingest_seconds = bare_cpu = ingest_cpu = 0.0
        testcases = attempts = 0
        for start in range(0, files, CHUNK):
            chunk = runs[start : start + CHUNK]
            seconds, cpu, seen = timed_cpu(lambda: bare_parse([path for path, _, _ in chunk]))  # noqa: B023
            bare_seconds += seconds
            bare_cpu += cpu
            testcases += seen
            seconds, cpu, stored = timed_cpu(lambda: ingest(chunk))  # noqa: B023
            ingest_seconds += seconds
            ingest_cpu += cpu
            attempts += stored

        budgets = Settings.resolve(root).flaky_budget
        today = dt.date.today()

        def build_report() -> int:
            report = analyze(store, budgets, Quarantine(root / "q.yaml"), today)
            rendered = text_lines(report), json.dumps(to_json(report)), markdown(report)
            return len(rendered)

        report_seconds, _ = timed(build_report)
        reingest_seconds, _ = timed(lambda: ingest(runs))  # idempotent: each file skipped by its digest
        store.close()

        emit(case, "bare_parse_seconds", bare_seconds)
        emit(case, "bare_parse_testcases_per_second", testcases / bare_seconds)
        emit(case, "ingest_seconds", ingest_seconds)
        emit(case, "ingest_files_per_second", files / ingest_seconds)
        emit(case, "ingest_testcases_per_second", testcases / ingest_seconds)
        emit(case, "attempts_stored", attempts)
        emit(case, "report_seconds", report_seconds)
        emit(case, "reingest_seconds", reingest_seconds)
        emit(case, "ratio_to_bare_parse", ingest_seconds / bare_seconds)
        emit(case, "cpu_ratio_to_bare_parse", ingest_cpu / bare_cpu)
        emit(case, "report_ratio_to_bare_parse", report_seconds / bare_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
