"""Snapshots of a workspace directory for checkpoints: every file's hash, and small files' content,
so a resume can restore the workspace and a contract can tell when it changed.

A long run checkpoints often while its workspace grows, so a file whose size and modification time
are unchanged since the last snapshot is not read again (and the trace writer stores only what
changed between two checkpoints).
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024
_SKIPPED_DIRS = frozenset({".git", "__pycache__", ".venv", "node_modules", ".agentevals"})


def _entry(data: bytes, with_content: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    if with_content:
        try:
            entry["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            entry["base64"] = base64.b64encode(data).decode("ascii")
    return entry


class Snapshotter:
    """Takes snapshots, remembering each file's entry between calls.

    A remembered entry is reused only when the file's size and modification time are unchanged and
    that time was well before the entry was read: a file written again within the file system's
    timestamp granularity could otherwise keep its old time and be missed (git's "racy clean" rule).
    """

    RACY_MARGIN_NS = 50_000_000

    def __init__(self) -> None:
        self._seen: dict[tuple[str, bool], tuple[int, int, int, dict[str, Any]]] = {}

    def snapshot(self, root: str | Path) -> dict[str, Any]:
        root = Path(root)
        files: dict[str, dict[str, Any]] = {}
        budget = MAX_TOTAL_BYTES
        for relative, path, stat in _walk(str(root), ""):
            with_content = stat.st_size <= MAX_FILE_BYTES and stat.st_size <= budget
            key = (path, with_content)
            seen = self._seen.get(key)
            if (
                seen is not None
                and seen[:2] == (stat.st_mtime_ns, stat.st_size)
                and stat.st_mtime_ns < seen[2] - self.RACY_MARGIN_NS
            ):
                entry = seen[3]
            else:
                read_at = time.time_ns()
                try:
                    with open(path, "rb") as handle:
                        entry = _entry(handle.read(), with_content)
                except OSError:
                    continue  # vanished or unreadable while we walked: not part of this snapshot
                self._seen[key] = (stat.st_mtime_ns, stat.st_size, read_at, entry)
            if with_content:
                budget -= stat.st_size
            files[relative] = entry
        return {"root": str(root), "files": files}


def _walk(folder: str, prefix: str) -> Iterator[tuple[str, str, os.stat_result]]:
    """(relative path, path, stat) of every regular file below `folder`, in sorted order."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        relative = prefix + entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in _SKIPPED_DIRS:
                    yield from _walk(entry.path, relative + "/")
            elif entry.is_file():
                yield relative, entry.path, entry.stat()
        except OSError:
            continue
