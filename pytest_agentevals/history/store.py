"""The storage interface of the history: a few writes, a few aggregate reads.

Everything above this module (the pytest collector, JUnit ingest, the verdicts and the reports) talks
to a `HistoryStore`, so another backend (a server database, an in-memory store for tests) can replace
the SQLite file by implementing these methods. `backends.open_store` picks the backend for a path.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from .model import STOPS_EXCLUDED, Attempt, Source, StoredAttempt


@dataclass(frozen=True)
class VerdictCount:
    """Passing, failing and budget-stopped attempts of one test variant on one commit (skips left
    out). `failures` never counts a stop: what a stop counts as is the verdicts' to say."""

    test_id: str
    variant: str
    layer: str | None
    sha: str
    passes: int
    failures: int
    last: int  # increases with the most recent attempt stored: orders verdicts by recency
    stopped: int = 0  # attempts a budget stopped (budget_stopped)


@dataclass(frozen=True)
class RunLayer:
    """A run that ran (non-skipped) tests of a layer; `last` orders runs by recency."""

    run_id: str
    layer: str | None
    last: int


@dataclass(frozen=True)
class RunFinal:
    """How one test variant ended in one run: the outcome of its last attempt there."""

    run_id: str
    sha: str
    test_id: str
    variant: str
    layer: str | None
    outcome: str
    last: int


@dataclass(frozen=True)
class ExcludedSource:
    """A source kept in the store but not judged (a session in which nearly every test failed)."""

    key: str
    run_id: str
    sha: str | None
    reason: str


class HistoryStore(Protocol):
    """Where test attempts are kept. Writes are atomic: a batch is stored whole or not at all."""

    @property
    def location(self) -> str:
        """Where the store lives, for messages (a file path for SQLite)."""
        ...

    def append(self, source: Source, attempts: Sequence[Attempt]) -> int:
        """Store `attempts` under `source`, creating the source on first use. Returns how many."""
        ...

    def ingest(self, source: Source, attempts: Sequence[Attempt]) -> bool:
        """Store a whole source once: False (and nothing stored) when its key is already there."""
        ...

    def has_source(self, key: str) -> bool: ...

    def exclude(self, key: str, reason: str) -> None:
        """Keep a source's attempts but leave them out of every verdict, saying why."""
        ...

    def known_tests(self) -> dict[str, str | None]:
        """Every test id stored, with the layer it was last seen in."""
        ...

    def verdict_counts(self, per_layer: int | None = None) -> list[VerdictCount]:
        """Per (test, variant, commit): passes, failures and budget stops, from judged sources with a
        known sha, the most recent first; with `per_layer`, only that many of the most recent of each
        layer (a commit with nothing but stops is one of them)."""
        ...

    def flaky_keys(self, budget_stops: str = STOPS_EXCLUDED) -> set[tuple[str, str, str]]:
        """(test id, variant, sha) of every judged group with both a pass and a failure (a budget stop
        one only when `budget_stops` is "fail"; otherwise it is left out like a skip)."""
        ...

    def run_layers(self, budget_stops: str = STOPS_EXCLUDED) -> list[RunLayer]:
        """Per (run, layer): the runs of judged sources, with their recency (attempts left out as in
        `flaky_keys`)."""
        ...

    def failing_finals(self, budget_stops: str = STOPS_EXCLUDED) -> list[RunFinal]:
        """Per (run, test, variant) whose last attempt failed, judged sources only, skips (and budget
        stops, unless `budget_stops` is "fail") left out."""
        ...

    def excluded_sources(self) -> list[ExcludedSource]: ...

    def unjudged_attempts(self) -> int:
        """How many attempts have no commit sha (kept, never judged)."""
        ...

    def attempts(self) -> Iterator[StoredAttempt]:
        """Every attempt with its source's commit and run, oldest first."""
        ...

    def close(self) -> None: ...
