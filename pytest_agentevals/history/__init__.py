"""The test-outcome history: every attempt recorded, verdicts per commit, per-layer flakiness budgets.

`history/` is about test outcomes, not traffic: it never imports `recording/`.

- `store` / `sqlite` / `postgres` / `memory` / `backends`: the storage interface, its SQLite file
  (WAL, `BEGIN IMMEDIATE`), a PostgreSQL server shared by every CI job, an in-memory one for tests,
  and `open_store`, which picks the backend for a path or URL;
- `plugin`: the pytest face (xdist-aware: only the controller writes);
- `attempts`: one reading of pytest's reports (a test's layer, what an attempt ended as), shared
  with the pyramid table;
- `ci_env`: the commit and CI run outcomes are filed under (`resolve_commit`);
- `junit` / `ingest`: CI results from JUnit XML, reruns included, idempotent;
- `verdicts` / `budgets` / `quarantine` / `analysis`: PASS / FAIL / FLAKY per commit, budget
  decisions over Wilson intervals (`pytest_agentevals.stats`);
- `report`: terminal, JSON and Markdown.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .analysis import FlakinessReport, analyze
    from .attempts import Attempts, ReportedAttempt, mark_budget_stop, tag_layer
    from .backends import open_store
    from .budgets import FLAKY_EXIT_CODE
    from .ci_env import Commit, local_run_id, resolve_commit
    from .model import BUDGET_STOPPED, ERROR, FAILED, PASSED, SKIPPED, Attempt, Source, StoredAttempt
    from .store import HistoryStore

__all__ = [
    "BUDGET_STOPPED",
    "ERROR",
    "FAILED",
    "FLAKY_EXIT_CODE",
    "PASSED",
    "SKIPPED",
    "Attempt",
    "Attempts",
    "Commit",
    "FlakinessReport",
    "HistoryStore",
    "ReportedAttempt",
    "Source",
    "StoredAttempt",
    "analyze",
    "local_run_id",
    "mark_budget_stop",
    "open_store",
    "resolve_commit",
    "tag_layer",
]

__getattr__, __dir__ = attach(__name__, __file__)
