"""Which backend keeps the history: an SQLite file at a path, or PostgreSQL at a postgresql:// URL.

Kept apart from `store` (the interface) so the interface never imports an implementation of itself.
The PostgreSQL store (and psycopg with it) is imported only when a URL is given.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import HistoryError
from ..settings import Settings
from ..settings.dburl import DatabaseURL
from .store import HistoryStore


def open_store(where: Path | DatabaseURL) -> HistoryStore:
    """The store at `where`: PostgreSQL for a URL (its schema created or migrated on first use), else
    an SQLite file (created with its folder when missing)."""
    if isinstance(where, DatabaseURL):
        from .postgres import PostgresStore

        return PostgresStore(where)
    from .sqlite import SQLiteStore

    return SQLiteStore(where)


def history_of(settings: Settings, *, create: bool) -> Path | DatabaseURL:
    """The history the settings name; a file that must be read (`create` false) must exist already."""
    if settings.history is None:
        raise HistoryError("the history is off ([tool.agentevals] history = 'off'); give --history PATH")
    if isinstance(settings.history, Path) and not create and not settings.history.exists():
        raise HistoryError(
            f"{settings.history}: no history there yet; run pytest with the plugin, or "
            "`agentevals flaky ingest`, first (or give --history PATH)"
        )
    return settings.history
