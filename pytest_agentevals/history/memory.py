"""A `HistoryStore` in memory: the fake the project's own tests run the history suite on, beside the
SQLite file and the PostgreSQL server, and a reference the other two must agree with.

It keeps the same promises a real store does where they can be kept in one process: a batch is
stored whole or not at all (it is checked before anything is kept), `ingest` stores a source key
once, and `last` increases with every attempt stored.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..errors import HistoryError
from .model import (
    BUDGET_STOPPED,
    OUTCOMES,
    PASSED,
    STOPS_EXCLUDED,
    STOPS_FAIL,
    Attempt,
    Source,
    StoredAttempt,
    ignored_outcomes,
)
from .store import ExcludedSource, RunFinal, RunLayer, VerdictCount

TestKey = tuple[str, str, str]  # test_id, variant, layer ('' outside the pyramid)


@dataclass
class _Source:
    source: Source
    excluded: str | None = None


@dataclass
class _Row:
    id: int
    source: str  # key
    test: TestKey
    attempt: int
    outcome: str
    duration: float
    worker: str | None


@dataclass
class MemoryStore:
    """The history kept in this object only; `location` is `memory:`."""

    _sources: dict[str, _Source] = field(default_factory=dict)
    _tests: dict[TestKey, int] = field(default_factory=dict)
    _rows: list[_Row] = field(default_factory=list)

    @property
    def location(self) -> str:
        return "memory:"

    # -- writes -----------------------------------------------------------------------------------

    def append(self, source: Source, attempts: Sequence[Attempt]) -> int:
        for attempt in attempts:  # checked whole first: a bad batch stores nothing
            if attempt.outcome not in OUTCOMES:
                raise HistoryError(f"memory: cannot write to the history ({attempt.outcome!r} is no outcome)")
        self._sources.setdefault(source.key, _Source(source))
        for test_id, layer, variant, number, outcome, duration, worker in attempts:
            key = (test_id, variant, layer or "")
            self._tests.setdefault(key, len(self._tests) + 1)
            self._rows.append(_Row(len(self._rows) + 1, source.key, key, number, outcome, duration, worker))
        return len(attempts)

    def ingest(self, source: Source, attempts: Sequence[Attempt]) -> bool:
        if source.key in self._sources:
            return False
        self.append(source, attempts)
        return True

    def has_source(self, key: str) -> bool:
        return key in self._sources

    def exclude(self, key: str, reason: str) -> None:
        if key in self._sources:
            self._sources[key].excluded = reason

    # -- reads ------------------------------------------------------------------------------------

    def _judged(self, budget_stops: str = STOPS_FAIL) -> Iterator[tuple[_Row, Source]]:
        left_out = ignored_outcomes(budget_stops)
        for row in self._rows:
            kept = self._sources[row.source]
            if kept.excluded is None and kept.source.sha is not None and row.outcome not in left_out:
                yield row, kept.source

    def known_tests(self) -> dict[str, str | None]:
        return {test_id: layer or None for (test_id, _, layer) in self._tests}

    def verdict_counts(self, per_layer: int | None = None) -> list[VerdictCount]:
        groups: dict[tuple[TestKey, str], list[int]] = {}
        for row, source in self._judged():
            assert source.sha is not None
            counts = groups.setdefault((row.test, source.sha), [0, 0, 0, 0])
            counts[0 if row.outcome == PASSED else 3 if row.outcome == BUDGET_STOPPED else 1] += 1
            counts[2] = max(counts[2], row.id)
        ordered = sorted(groups.items(), key=lambda item: -item[1][2])
        seen: dict[str, int] = {}
        out = []
        for ((test_id, variant, layer), sha), (passes, failures, last, stopped) in ordered:
            seen[layer] = seen.get(layer, 0) + 1
            if per_layer is None or seen[layer] <= per_layer:
                out.append(
                    VerdictCount(test_id, variant, layer or None, sha, passes, failures, last, stopped)
                )
        return out

    def flaky_keys(self, budget_stops: str = STOPS_EXCLUDED) -> set[tuple[str, str, str]]:
        counted = budget_stops == STOPS_FAIL
        return {
            (c.test_id, c.variant, c.sha)
            for c in self.verdict_counts()
            if c.passes > 0 and c.failures + (c.stopped if counted else 0) > 0
        }

    def run_layers(self, budget_stops: str = STOPS_EXCLUDED) -> list[RunLayer]:
        last: dict[tuple[str, str], int] = {}
        for row, source in self._judged(budget_stops):
            key = (source.run_id, row.test[2])
            last[key] = max(last.get(key, 0), row.id)
        return [RunLayer(run_id, layer or None, at) for (run_id, layer), at in last.items()]

    def failing_finals(self, budget_stops: str = STOPS_EXCLUDED) -> list[RunFinal]:
        finals: dict[tuple[str, TestKey], tuple[_Row, Source]] = {}
        for row, source in self._judged(budget_stops):
            finals[(source.run_id, row.test)] = (row, source)  # rows are in id order: the last wins
        out = []
        for (run_id, (test_id, variant, layer)), (row, source) in finals.items():
            if row.outcome != PASSED:
                assert source.sha is not None
                out.append(RunFinal(run_id, source.sha, test_id, variant, layer or None, row.outcome, row.id))
        return out

    def excluded_sources(self) -> list[ExcludedSource]:
        return [
            ExcludedSource(key, kept.source.run_id, kept.source.sha, kept.excluded)
            for key, kept in self._sources.items()
            if kept.excluded is not None
        ]

    def unjudged_attempts(self) -> int:
        return sum(1 for row in self._rows if self._sources[row.source].source.sha is None)

    def attempts(self) -> Iterator[StoredAttempt]:
        for row in self._rows:
            source = self._sources[row.source].source
            test_id, variant, layer = row.test
            yield StoredAttempt(
                test_id,
                layer or None,
                variant,
                source.sha,
                source.branch,
                source.run_id,
                row.attempt,
                row.outcome,
                row.duration,
                row.worker,
                row.source,
            )

    def close(self) -> None:
        pass
