"""Verdicts from stored results: what `agentevals marathon report` prints and the run report shows,
and the runs a REF of `agentevals marathon compare` names.

Results files are read where they are named or found (folders are searched, hidden ones included);
one result per test, seed and commit is kept (`merge.gather`), and each test is judged per commit,
or over every commit with `pool`.
"""

from __future__ import annotations

import dataclasses
import subprocess
import warnings
from collections.abc import Sequence
from pathlib import Path

from ..errors import MarathonError
from . import render
from .merge import gather
from .results import SeedResult, results_in
from .rows import VerdictRow
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


def verdicts_of(
    results: Sequence[SeedResult], pool: bool = False, budget_stops: str = "exclude"
) -> list[Verdict]:
    """Each test's verdict at each commit (over every commit when pooling), by test then commit;
    `budget_stops` as `judge` takes it."""
    out: list[Verdict] = []
    groups = group(results, pool=pool)
    for test, commit in sorted(groups, key=lambda key: (key[0], key[1] or "")):
        runs = groups[(test, commit)]
        verdict = judge(test, runs, budget_stops=budget_stops)
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


def runs_named(ref: str, pool: Sequence[SeedResult], flag: str) -> tuple[str, list[SeedResult]]:
    """The runs a REF of `compare` names, with the name to show for it: a results file or folder, else
    a commit of `pool`, its prefix (4 characters at least), a branch or a git ref. `flag` is the
    option it came from, for the error when it names no commit or several."""
    path = Path(ref)
    if path.exists():
        runs = [result for result, _ in gather(results_in([path]))[0].values()]
        return ref, runs
    commits = {r.commit for r in pool if r.commit}
    named = {c for c in commits if c == ref or (len(ref) >= 4 and c.startswith(ref))}
    if not named:
        named = {r.commit for r in pool if r.commit and r.branch == ref}
    if not named:
        sha = _git_sha(ref)
        named = {c for c in commits if sha is not None and c.split("+", 1)[0] == sha}
    if not named:
        raise MarathonError(f"{flag} {ref}: no marathon result names that commit, branch or git ref")
    if len(named) > 1:
        raise MarathonError(
            f"{flag} {ref}: names {len(named)} commits "
            f"({', '.join(sorted(c[:12] for c in named))}): give one sha"
        )
    (commit,) = named
    return commit[:12], [r for r in pool if r.commit == commit]


def _git_sha(ref: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def verdict_rows_under(paths: Sequence[str]) -> tuple[list[VerdictRow], list[str]]:
    """The marathon verdicts of the results files under the folders given (a night's artifacts): the
    page's marathon section. A results file that cannot be read is a warning here, not an error."""
    folders = [path for path in paths if Path(path).is_dir()]
    if not folders or not results_in(folders):
        return [], []
    try:
        results, problems = load(folders)
    except MarathonError as exc:
        return [], [f"marathon verdicts left out: {exc}"]
    return render.verdict_rows(verdicts_of(results)), problems
