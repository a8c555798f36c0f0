"""Verdicts from stored results: what `agentevals marathon report` prints and the run report shows.

Results files are read where they are named or found (folders are searched, hidden ones included);
one result per test, seed and commit is kept (`merge.gather`), and each test is judged per commit,
or over every commit with `pool`.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from pathlib import Path

from ..errors import MarathonError
from .merge import gather
from .results import SeedResult, results_in
from .verdict import Verdict, group, judge, pooled_duplicates


def load(paths: Sequence[str | Path]) -> tuple[list[SeedResult], list[str]]:
    """The results under `paths`, one per test, seed and commit, and the warnings reading them gave
    (a torn last line). MarathonError when there is no results file, or a malformed one."""
    files = results_in(paths)
    if not files:
        raise MarathonError(
            "no marathon results file (results.jsonl) in "
            + ", ".join(str(path) for path in paths)
            + ": run pytest -m marathon first"
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chosen, _ = gather(files)
    return [result for result, _ in chosen.values()], [str(warning.message) for warning in caught]


def verdicts_of(results: Sequence[SeedResult], pool: bool = False) -> list[Verdict]:
    """Each test's verdict at each commit (over every commit when pooling), by test then commit."""
    out: list[Verdict] = []
    groups = group(results, pool=pool)
    for test, commit in sorted(groups, key=lambda key: (key[0], key[1] or "")):
        runs = groups[(test, commit)]
        verdict = judge(test, runs)
        twice = pooled_duplicates(runs)
        if pool and twice:
            seeds = ", ".join(map(str, twice))
            note = (
                f"pooled {len(verdict.commits)} commits: seed(s) {seeds} ran more than once, each run counts"
            )
            verdict = dataclasses.replace(verdict, notes=(*verdict.notes, note))
        out.append(verdict)
    return out


def trace_of(result: SeedResult) -> Path | None:
    """Where a stored result's trace is: beside the results file it was read from."""
    if result.trace is None or not result.source:
        return None
    path = Path(result.source.rsplit(":", 1)[0]).parent / result.trace
    return path if path.is_file() else None
