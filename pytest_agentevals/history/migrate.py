"""Copy one history into another (an SQLite file into PostgreSQL): source by source, each whole.

Each source goes in with `ingest`, one transaction, at most once: a copy run again, or resumed after
a failure, copies only the sources still missing. A source excluded as an outage stays excluded.
Attempts keep their order, so the copy's recency (`last`) orders verdicts as the original's did.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import JUNIT, PYTEST, Attempt, Source
from .store import HistoryStore


@dataclass(frozen=True)
class Copied:
    sources: int  # copied now
    attempts: int
    already: int  # sources the target had already

    def __str__(self) -> str:
        return (
            f"{self.sources} source(s) with {self.attempts} attempt(s) copied, {self.already} already there"
        )


def copy_history(origin: HistoryStore, target: HistoryStore) -> Copied:
    """Every source of `origin` not yet in `target`, copied whole."""
    batches: dict[str, tuple[Source, list[Attempt]]] = {}
    for row in origin.attempts():  # oldest first: sources in the order they were first stored
        if row.source not in batches:
            kind = JUNIT if row.source.startswith(f"{JUNIT}:") else PYTEST
            batches[row.source] = (Source(row.source, kind, row.run_id, row.sha, row.branch), [])
        batches[row.source][1].append(
            Attempt(row.test_id, row.layer, row.variant, row.attempt, row.outcome, row.duration, row.worker)
        )
    excluded = {source.key: source.reason for source in origin.excluded_sources()}
    sources = attempts = already = 0
    for key, (source, rows) in batches.items():
        if target.ingest(source, rows):
            sources += 1
            attempts += len(rows)
        else:
            already += 1
        if key in excluded:  # again on a rerun too: a copy cut off between the two stays right
            target.exclude(key, excluded[key])
    return Copied(sources, attempts, already)
