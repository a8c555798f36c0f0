"""Which backend keeps the history at a path. Today one: an SQLite file.

Kept apart from `store` (the interface) so the interface never imports an implementation of itself.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import HistoryError
from ..settings import Settings
from .sqlite import SQLiteStore
from .store import HistoryStore


def open_store(path: Path) -> HistoryStore:
    """The store kept at `path` (an SQLite file, created with its folder when missing)."""
    return SQLiteStore(path)


def history_of(settings: Settings, *, create: bool) -> Path:
    """The history the settings name; one that must be read (`create` false) must exist already."""
    if settings.history is None:
        raise HistoryError("the history is off ([tool.agentevals] history = 'off'); give --history PATH")
    if not create and not settings.history.exists():
        raise HistoryError(
            f"{settings.history}: no history there yet; run pytest with the plugin, or "
            "`agentevals flaky ingest`, first (or give --history PATH)"
        )
    return settings.history
