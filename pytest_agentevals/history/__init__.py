"""The test-outcome history: every attempt recorded, verdicts per commit, per-layer flakiness budgets.

`history/` is about test outcomes, not traffic: it never imports `recording/`.

- `store` / `sqlite` / `backends`: the storage interface, its SQLite file (WAL, `BEGIN IMMEDIATE`),
  and `open_store`, which picks the backend for a path;
- `collector`: the pytest plugin object (xdist-aware: only the controller writes);
- `outcome`: one reading of pytest's reports (a test's layer, what an attempt ended as), shared
  with the pyramid table;
- `junit` / `ingest`: CI results from JUnit XML, reruns included, idempotent;
- `verdicts` / `stats` / `budgets` / `quarantine` / `analysis`: PASS / FAIL / FLAKY, Wilson
  intervals, budget decisions;
- `report`: terminal, JSON and Markdown.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .analysis import FlakinessReport, analyze
    from .backends import open_store
    from .budgets import FLAKY_EXIT_CODE
    from .model import Attempt, Source, StoredAttempt
    from .store import HistoryStore

__all__ = [
    "FLAKY_EXIT_CODE",
    "Attempt",
    "FlakinessReport",
    "HistoryStore",
    "Source",
    "StoredAttempt",
    "analyze",
    "open_store",
]

__getattr__, __dir__ = attach(__name__, __file__)
