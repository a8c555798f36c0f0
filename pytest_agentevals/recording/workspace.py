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
import stat
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

    A symbolic link is stored as a link, `{"link": "<its target, as written>"}`, never read through,
    and nothing outside the root is read: folders are opened relative to their parent's descriptor
    and files with O_NOFOLLOW, so a link swapped in during the walk is refused, not followed.
    """

    RACY_MARGIN_NS = 50_000_000

    def __init__(self) -> None:
        self._seen: dict[tuple[str, bool], tuple[int, int, int, dict[str, Any]]] = {}

    def snapshot(self, root: str | Path) -> dict[str, Any]:
        base = str(root)
        files: dict[str, dict[str, Any]] = {}
        budget = MAX_TOTAL_BYTES
        for relative, found in _walk_root(base):
            if isinstance(found, str):
                files[relative] = {"link": found}
                continue
            folder, name, info = found
            with_content = info.st_size <= MAX_FILE_BYTES and info.st_size <= budget
            key = (f"{base}/{relative}", with_content)
            seen = self._seen.get(key)
            if (
                seen is not None
                and seen[:2] == (info.st_mtime_ns, info.st_size)
                and info.st_mtime_ns < seen[2] - self.RACY_MARGIN_NS
            ):
                entry = seen[3]
            else:
                read_at = time.time_ns()
                data = _read(folder, name)
                if data is None:
                    continue  # vanished, unreadable or no longer a plain file: not in this snapshot
                entry = _entry(data, with_content)
                self._seen[key] = (info.st_mtime_ns, info.st_size, read_at, entry)
            if with_content:
                budget -= info.st_size
            files[relative] = entry
        return {"root": base, "files": files}


# Where the platform allows it, folders are walked by descriptor and files opened without following a
# final link; elsewhere (Windows) by path, after checking each entry is no link.
_BY_DESCRIPTOR = os.open in os.supports_dir_fd and os.scandir in os.supports_fd
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)

Folder = int | str  # a folder's descriptor, or its path
Found = str | tuple[Folder, str, os.stat_result]  # a link's target, or (folder, name, stat) of a file


def _walk_root(root: str) -> Iterator[tuple[str, Found]]:
    if not _BY_DESCRIPTOR:
        yield from _walk(root, "")
        return
    try:
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        yield from _walk(fd, "")
    finally:
        os.close(fd)


def _walk(folder: Folder, prefix: str) -> Iterator[tuple[str, Found]]:
    """(relative path, what is there) of every file and link below `folder`, in sorted order."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        relative = prefix + entry.name
        try:
            if entry.is_symlink():
                yield (
                    relative,
                    os.readlink(entry.name, dir_fd=folder)
                    if isinstance(folder, int)
                    else os.readlink(entry.path),
                )
            elif entry.is_dir(follow_symlinks=False):
                if entry.name in _SKIPPED_DIRS:
                    continue
                if isinstance(folder, str):
                    yield from _walk(entry.path, relative + "/")
                    continue
                child = os.open(entry.name, _FOLDER, dir_fd=folder)
                try:
                    yield from _walk(child, relative + "/")
                finally:
                    os.close(child)
            elif entry.is_file(follow_symlinks=False):
                yield relative, (folder, entry.name, entry.stat(follow_symlinks=False))
        except OSError:
            continue


def _read(folder: Folder, name: str) -> bytes | None:
    """The content of a plain file, never through a link; None when it is not one (any more)."""
    try:
        if isinstance(folder, int):
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=folder)
        else:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                return None
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read()
