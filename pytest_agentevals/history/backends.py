"""Which backend keeps the history at a path. Today one: an SQLite file.

Kept apart from `store` (the interface) so the interface never imports an implementation of itself.
"""

from __future__ import annotations

from pathlib import Path

from .sqlite import SQLiteStore
from .store import HistoryStore


def open_store(path: Path) -> HistoryStore:
    """The store kept at `path` (an SQLite file, created with its folder when missing)."""
    return SQLiteStore(path)
