"""A marathon's results file: one JSON line per test, seed and commit, appended as each seed ends.

```
.agentevals/marathons/results.jsonl                                   the results (JSON Lines)
.agentevals/marathons/<test>-<hash>/seed-3.trace.jsonl                each seed's trace
```

A line holds the test (its node id without `[seed=N]`), the seed, the commit, branch and CI run it
ran at, the seed item's outcome, its trace (relative to the results file's folder), when it ended,
its `RunMetrics` (`to_json`) and the test's plan (planned seeds, `max_seeds`, thresholds), so a
verdict can be judged from the file alone, on any machine.

The file is append-only: a line is written in one `write` and synced, so a session killed between
seeds loses nothing, and one killed in the middle of a line leaves a torn last line. A reader takes
the file up to a torn last line with a warning; any other malformed line is a `MarathonError` naming
the file and the line. An append after a torn line first cuts the torn part off (it is no result).
Within one file a later line for the same test, seed and commit replaces an earlier one (a rerun).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MarathonError
from ..fileio import make_folders, open_nofollow
from ..metrics import RunMetrics
from ..settings.seeds import MAX_SEEDS
from ..trace.loaders import load_json
from ..trace.naming import safe_name
from ..trace.paths import path_problem

RESULTS_FILE = "results.jsonl"
RESULTS_VERSION = 1
MAX_LINE_BYTES = 1 << 20  # a result is a few kilobytes; a longer line is not one
OUTCOMES = ("passed", "failed", "error", "skipped")

# What a seed's run ended as, in the order a verdict lists them. `crashed`: the run ended on an
# exception, or never ended (its process died).
STATUS_ORDER = (
    "ok",
    "failed",
    "stalled",
    "loop",
    "budget_exhausted",
    "escalated",
    "no_model_calls",
    "crashed",
    "error",
    "interrupted",
)


BUDGET_STOPPED = "budget_exhausted"


class TornResultsWarning(UserWarning):
    """The last line of a results file was cut off mid-write (a CI job killed); it was ignored."""


def test_folder(test: str) -> str:
    """The folder of a test's seed traces: its node id made safe, and a short hash of it."""
    readable = safe_name(test.replace("::", "--"))[:100]
    return f"{readable}-{hashlib.sha1(test.encode('utf-8')).hexdigest()[:8]}"


def trace_name(test: str, seed: int) -> str:
    """A seed's trace, relative to the results file's folder: `<test folder>/seed-<n>.trace.jsonl`."""
    return f"{test_folder(test)}/seed-{seed}.trace.jsonl"


def status_word(metrics: RunMetrics) -> str:
    """How a seed's run ended, for counting: its run_end status, or `crashed` when it ended on an
    exception or has no run_end."""
    if not metrics.complete or metrics.crashed or not metrics.status:
        return "crashed"
    return metrics.status


@dataclass(frozen=True)
class Plan:
    """What a marathon test asked for: its planned seeds, how far it may grow, its thresholds."""

    seeds: tuple[int, ...]
    max_seeds: int | None = None
    thresholds: Mapping[str, float] = field(default_factory=dict)
    max_total_cost_usd: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "seeds": list(self.seeds),
            "max_seeds": self.max_seeds,
            "thresholds": dict(self.thresholds),
            "max_total_cost_usd": self.max_total_cost_usd,
        }

    @classmethod
    def from_json(cls, data: Any) -> Plan:
        if not isinstance(data, Mapping):
            raise ValueError("`plan` is not an object")
        seeds = data.get("seeds")
        if not isinstance(seeds, list) or not all(_whole(seed) for seed in seeds):
            raise ValueError("`plan.seeds` is not a list of seeds")
        if len(seeds) > MAX_SEEDS:
            raise ValueError(f"`plan.seeds` lists {len(seeds)} seeds, more than {MAX_SEEDS}")
        thresholds = data.get("thresholds") or {}
        if not isinstance(thresholds, Mapping) or not all(
            isinstance(key, str) and _number(value) for key, value in thresholds.items()
        ):
            raise ValueError("`plan.thresholds` is not an object of numbers")
        max_seeds = data.get("max_seeds")
        if max_seeds is not None and not _whole(max_seeds):
            raise ValueError("`plan.max_seeds` is not a whole number")
        # A verdict lists the seeds max_seeds adds: an unbounded one would fill memory.
        if max_seeds is not None and max_seeds > MAX_SEEDS:
            raise ValueError(f"`plan.max_seeds` {max_seeds} is more than {MAX_SEEDS}")
        total = data.get("max_total_cost_usd")
        if total is not None and not (_number(total) and 0 <= total <= MAX_COST_USD):
            raise ValueError(f"`plan.max_total_cost_usd` is not a number from 0 to {MAX_COST_USD:g}")
        return cls(
            tuple(seeds), max_seeds, {k: float(v) for k, v in thresholds.items()}, _float_or_none(total)
        )


@dataclass(frozen=True)
class SeedResult:
    """One seed's run of one marathon test at one commit (a line of the results file)."""

    test: str
    seed: int
    commit: str | None
    outcome: str  # the seed item's: passed, failed, error
    metrics: RunMetrics
    plan: Plan
    trace: str | None = None  # relative to the results file's folder
    branch: str | None = None
    run_id: str | None = None  # the CI run (or local session) it ran in
    finished_at: str = ""
    source: str = field(default="", compare=False)  # file:line it was read from (for messages)

    @property
    def key(self) -> tuple[str, int, str | None]:
        return (self.test, self.seed, self.commit)

    @property
    def status(self) -> str:
        return status_word(self.metrics)

    @property
    def passed(self) -> bool:
        """A verified pass: what the pass rate counts."""
        return self.metrics.verified_pass

    @property
    def stopped_by_budget(self) -> bool:
        """Whether a budget stopped the run: the guard did its job, which says nothing of the agent."""
        return self.status == BUDGET_STOPPED

    def to_json(self) -> dict[str, Any]:
        return {
            "v": RESULTS_VERSION,
            "test": self.test,
            "seed": self.seed,
            "commit": self.commit,
            "branch": self.branch,
            "run_id": self.run_id,
            "outcome": self.outcome,
            "status": self.status,
            "trace": self.trace,
            "finished_at": self.finished_at,
            "plan": self.plan.to_json(),
            "metrics": self.metrics.to_json(),
        }

    @classmethod
    def from_json(cls, data: Any, source: str = "") -> SeedResult:
        """A stored result; ValueError saying what is wrong with it."""
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a JSON object, found {type(data).__name__}")
        version = data.get("v")
        if version != RESULTS_VERSION:
            newer = isinstance(version, int) and not isinstance(version, bool) and version > RESULTS_VERSION
            raise ValueError(
                f"results format version {version!r} "
                + (
                    "is newer than this pytest-agentevals reads: upgrade it"
                    if newer
                    else "is not one it knows"
                )
            )
        test, seed, outcome = data.get("test"), data.get("seed"), data.get("outcome")
        if not isinstance(test, str) or not test:
            raise ValueError("`test` is not a test id")
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError("`seed` is not a seed (a whole number >= 0)")
        if outcome not in OUTCOMES:
            raise ValueError(f"`outcome` {outcome!r} is not one of {', '.join(OUTCOMES)}")
        for name in ("commit", "branch", "run_id", "trace", "finished_at"):
            if data.get(name) is not None and not isinstance(data.get(name), str):
                raise ValueError(f"`{name}` is not a string")
        trace = data.get("trace")
        if trace is not None and path_problem(trace) is not None:
            raise ValueError(f"`trace` {trace!r} {path_problem(trace)}")
        if trace is not None and not trace.endswith(".trace.jsonl"):
            # A merge copies the file it names: a row naming `conftest.py` copied code into the output.
            raise ValueError(f"`trace` {trace!r} is not a trace (a seed's trace is named *.trace.jsonl)")
        return cls(
            test=test,
            seed=seed,
            commit=data.get("commit"),
            outcome=outcome,
            metrics=_metrics(data.get("metrics")),
            plan=Plan.from_json(data.get("plan")),
            trace=trace,
            branch=data.get("branch"),
            run_id=data.get("run_id"),
            finished_at=data.get("finished_at") or "",
            source=source,
        )

    def agrees_with(self, other: SeedResult) -> bool:
        """The same result of the same run, as far as a verdict sees: the outcome and every metric
        but the run's id and duration (two copies of one job's file, or a deterministic rerun)."""
        mine, theirs = self.metrics.to_json(), other.metrics.to_json()
        for volatile in ("run_id", "duration_s"):
            mine.pop(volatile, None)
            theirs.pop(volatile, None)
        return self.key == other.key and self.outcome == other.outcome and mine == theirs


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


# -- the file ---------------------------------------------------------------------------------------


def read_results(path: str | Path, limit: int | None = None) -> list[SeedResult]:
    """Every result of a results file, in order (of its first `limit` bytes, when given: the file as
    it was when that was its size). A torn last line warns (`TornResultsWarning`) and is left out;
    anything else malformed is a `MarathonError` naming the file and the line."""
    path = Path(path)
    try:
        with path.open("rb") as opened:
            data = opened.read() if limit is None else opened.read(limit)
    except FileNotFoundError:
        raise MarathonError(
            f"{path}: no such results file (a marathon writes it: pytest -m marathon)"
        ) from None
    except OSError as exc:
        raise MarathonError(f"{path}: cannot be read: {exc.strerror}") from None
    results: list[SeedResult] = []
    with io.BytesIO(data) as handle:
        for number, raw, last in _lines(handle, path):
            torn = not raw.endswith(b"\n")
            try:
                data = load_json(raw.decode("utf-8"), _refused(path), number)
            except (UnicodeDecodeError, MarathonError) as exc:
                if last and torn:
                    warnings.warn(
                        TornResultsWarning(
                            f"{path}:{number}: the last line is incomplete (a job killed mid-write?); "
                            "read the file up to it"
                        ),
                        stacklevel=2,
                    )
                    break
                if isinstance(exc, MarathonError):
                    raise
                raise MarathonError(f"{path}:{number}: the line is not UTF-8; {_FIX}") from None
            try:
                results.append(SeedResult.from_json(data, f"{path}:{number}"))
            except ValueError as exc:
                raise MarathonError(f"{path}:{number}: not a marathon result: {exc}; {_FIX}") from None
    return results


_FIX = "a results file holds one JSON result per line, as pytest -m marathon writes them (docs/marathon.md)"


def _lines(handle: Any, path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(number, line, is_last) of the non-blank lines, each at most MAX_LINE_BYTES long."""
    number = 0
    pending: tuple[int, bytes] | None = None
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            break
        number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise MarathonError(
                f"{path}:{number}: the line is longer than {MAX_LINE_BYTES} bytes; no result is; {_FIX}"
            )
        if not raw.strip():
            continue
        if pending is not None:
            yield pending[0], pending[1], False
        pending = (number, raw)
    if pending is not None:
        yield pending[0], pending[1], True


def append_result(path: str | Path, result: SeedResult) -> None:
    """Append one result as one line (written in one call and synced). A torn last line left by a
    killed writer is cut off first, with a warning."""
    path = Path(path)
    make_folders(path.parent)  # a committed link (file or folder) is refused, never written through
    line = json.dumps(result.to_json(), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    data = (line + "\n").encode("utf-8")
    fd = open_nofollow(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
    try:
        _cut_torn_tail(fd, path)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _cut_torn_tail(fd: int, path: Path) -> None:
    size = os.fstat(fd).st_size
    if size == 0:
        return
    if os.pread(fd, 1, size - 1) == b"\n":
        return
    # Find the last newline: everything after it is a torn line.
    start = size
    while start > 0:
        chunk = min(65536, start)
        block = os.pread(fd, chunk, start - chunk)
        at = block.rfind(b"\n")
        if at >= 0:
            start = start - chunk + at + 1
            break
        start -= chunk
    os.ftruncate(fd, start)
    warnings.warn(
        TornResultsWarning(f"{path}: cut off a torn last line (a session killed mid-write) before appending"),
        stacklevel=3,
    )


def latest(results: Iterable[SeedResult]) -> list[SeedResult]:
    """One result per test, seed and commit: the last one (a rerun replaces an earlier line)."""
    found: dict[tuple[str, int, str | None], SeedResult] = {}
    for result in results:
        found.pop(result.key, None)
        found[result.key] = result
    return list(found.values())


def results_in(paths: Sequence[str | Path], exclude: Path | None = None) -> list[Path]:
    """The results files named, or found under the folders named (hidden folders included, as a CI
    artifact keeps `.agentevals/`; links, to folders or files, not followed). `exclude` is a folder
    to skip."""
    found: list[Path] = []
    skip = exclude.resolve() if exclude is not None else None
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for root, dirs, names in os.walk(path):
                here = Path(root)
                if skip is not None and here.resolve() == skip:
                    dirs[:] = []
                    continue
                dirs.sort()
                candidate = here / RESULTS_FILE
                if RESULTS_FILE in names and candidate.is_file() and not candidate.is_symlink():
                    found.append(candidate)  # a link found in a folder is not followed out of it
        elif path.exists():
            found.append(path)
        else:
            raise MarathonError(f"{path}: no such results file or folder")
    return found


def read_all(paths: Sequence[str | Path], exclude: Path | None = None) -> list[tuple[Path, list[SeedResult]]]:
    """Each results file named or found under the folders named, read."""
    return [(path, read_results(path)) for path in results_in(paths, exclude)]


# -- checks on stored values --------------------------------------------------------------------------


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _float_or_none(value: Any) -> float | None:
    return float(value) if _number(value) else None


# The metrics a verdict reads, and what each must be.
_METRIC_KINDS: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "verified_pass": (bool, False),
    "complete": (bool, False),
    "crashed": (bool, False),
    "progress_auc": ((int, float), False),
    "loop_rate": ((int, float), True),
    "cost_usd": ((int, float), False),
    "restarts": (int, False),
    "status": (str, True),
    "unpriced_models": (list, False),
}


# A cost above this is no run's (a trillion dollars): sums of such values overflow a float.
MAX_COST_USD = 1e12

# The range of every number a verdict or a report reads; a value outside is a forged or broken file,
# never evidence (a progress-AUC of 5 would be judged "met").
_RANGES: dict[str, tuple[float, float]] = {
    "progress_auc": (0.0, 1.0),
    "progress_start": (0.0, 1.0),
    "progress_end": (0.0, 1.0),
    "verified_gain": (-1.0, 1.0),
    "loop_rate": (0.0, 1.0),
    "cache_hit_rate": (0.0, 1.0),
    "cost_usd": (0.0, MAX_COST_USD),
    "cost_per_verified_pass": (0.0, MAX_COST_USD),
    "duration_s": (0.0, 1e9),
    "peak_context_pressure": (0.0, 1e6),
}
_COUNTS = (
    "steps",
    "model_calls",
    "model_errors",
    "rate_limited",
    "overloaded",
    "tool_calls",
    "tool_errors",
    "step_budget",
    "longest_no_progress",
    "actions",
    "looped_actions",
    "peak_context_tokens",
    "checkpoints",
    "compactions",
    "restarts",
    "watchdog_fires",
    "budget_stops",
    "divergences",
)
_MAX_COUNT = 10**12  # more than any run makes; bounds what a sum or a table of counts can hold


def _metrics(data: Any) -> RunMetrics:
    if not isinstance(data, Mapping):
        raise ValueError("`metrics` is not an object")
    for name, (kind, optional) in _METRIC_KINDS.items():
        value = data.get(name)
        if value is None and optional:
            continue
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise ValueError(f"`metrics.{name}` is missing or not what a metric of that name is")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"`metrics.{name}` is not a finite number")
    _check_ranges(data)
    try:
        return RunMetrics.from_json(data)
    except ValueError as exc:
        raise ValueError(str(exc)) from None


def _check_ranges(data: Mapping[str, Any]) -> None:
    """Every stored number within what a run can measure (ValueError naming the metric)."""
    for name, (low, high) in _RANGES.items():
        value = data.get(name)
        if value is None:
            continue
        if not _number(value) or not low <= value <= high:
            raise ValueError(f"`metrics.{name}` is {value!r}: not a number from {low:g} to {high:g}")
    for name in _COUNTS:
        value = data.get(name)
        if value is not None and not (_whole(value) and value <= _MAX_COUNT):
            raise ValueError(f"`metrics.{name}` is {value!r}: not a count (a whole number >= 0)")
    for name in ("tokens", "loops", "guard_events"):
        table = data.get(name)
        if table is None:
            continue
        if not isinstance(table, Mapping) or not all(
            isinstance(key, str) and _whole(value) and value <= _MAX_COUNT for key, value in table.items()
        ):
            raise ValueError(f"`metrics.{name}` is not an object of counts (whole numbers >= 0)")


def _refused(path: Path | str) -> Callable[[int, str], MarathonError]:
    def fail(line: int, problem: str) -> MarathonError:
        return MarathonError(f"{path}:{line}: the line is {problem}; {_FIX}")

    return fail
