"""The history suite's stores: each test taking `backend` runs on SQLite, PostgreSQL and in memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_agentevals.history.backends import open_store
from pytest_agentevals.history.memory import MemoryStore
from pytest_agentevals.history.store import HistoryStore

Opener = Callable[[], HistoryStore]


@pytest.fixture(params=["sqlite", "postgresql", "memory"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens a handle on one store (a second call: another handle on the same store, as another
    process would have; the in-memory store has one handle)."""
    opened: list[HistoryStore] = []
    if request.param == "memory":
        only = MemoryStore()

        def opener() -> HistoryStore:
            return only

    else:
        where = tmp_path / "h.sqlite" if request.param == "sqlite" else request.getfixturevalue("pg_url")

        def opener() -> HistoryStore:
            opened.append(open_store(where))
            return opened[-1]

    yield opener
    for store in opened:
        store.close()
