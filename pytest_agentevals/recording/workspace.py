"""Snapshots of a workspace directory for checkpoints: every file's hash, and small files' content,
so a resume can restore the workspace and a contract can tell when it changed.

A long run checkpoints often while its workspace grows, so a file whose size and modification time
are unchanged since the last snapshot is not read again (and the trace writer stores only what
changed between two checkpoints).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import operator
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
    "Well before" is RACY_MARGIN_NS, or WHOLE_SECOND_MARGIN_NS for a time in whole seconds: the mark
    of a file system that keeps no finer (ext3, HFS+; FAT keeps two), where a file written again in
    the same second keeps its time. Whether an entry can be trusted is settled when it is read (its
    time is compared then, and the entry is used only while the time stays the same).

    A symbolic link is stored as a link, `{"link": "<its target, as written>"}`, never read through,
    and nothing outside the root is read: folders are opened relative to their parent's descriptor
    and files with O_NOFOLLOW, so a link swapped in during the walk is refused, not followed.
    """

    RACY_MARGIN_NS = 50_000_000
    WHOLE_SECOND_MARGIN_NS = 3_000_000_000

    def __init__(self) -> None:
        # Per root, per (relative path, with content): (mtime_ns, size, trusted, entry), `trusted`
        # when the time was well before the read, so the entry stands while size and time do.
        self._seen: dict[str, dict[tuple[str, bool], tuple[int, int, bool, dict[str, Any]]]] = {}

    def snapshot(self, root: str | Path) -> dict[str, Any]:
        base = str(root)
        files: dict[str, dict[str, Any]] = {}
        budget = MAX_TOTAL_BYTES
        seen = self._seen.setdefault(base, {})
        margin, whole_second_margin = self.RACY_MARGIN_NS, self.WHOLE_SECOND_MARGIN_NS
        for relative, folder, name, info in itertools.chain.from_iterable(_walk_root(base)):
            if info is None:
                files[relative] = {"link": name}  # a link's target, in place of a name
                continue
            size, mtime = info.st_size, info.st_mtime_ns
            with_content = size <= MAX_FILE_BYTES and size <= budget
            key = (relative, with_content)
            known = seen.get(key)
            if known is not None and known[2] and known[0] == mtime and known[1] == size:
                entry = known[3]
            else:
                read_at = time.time_ns()
                data = _read(folder, name)
                if data is None:
                    continue  # vanished, unreadable or no longer a plain file: not in this snapshot
                entry = _entry(data, with_content)
                racy = whole_second_margin if mtime % 1_000_000_000 == 0 else margin
                seen[key] = (mtime, size, mtime < read_at - racy, entry)
            if with_content:
                budget -= size
            files[relative] = entry
        return {"root": base, "files": files}


# Where the platform allows it, folders are walked by descriptor and files opened without following a
# final link; elsewhere (Windows) by path, after checking each entry is no link.
_BY_DESCRIPTOR = os.open in os.supports_dir_fd and os.scandir in os.supports_fd
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)

Folder = int | str  # a folder's descriptor, or its path
# (relative path, folder, name, stat) of a file, or (relative path, folder, the link's target, None)
Found = tuple[str, Folder, str, os.stat_result | None]


def _walk_root(root: str) -> Iterator[list[Found]]:
    """Every file and link below `root`, in sorted order, a folder's consecutive ones a list: a long
    run snapshots its workspace at every checkpoint, and a generator's resumption per file was a
    third of a snapshot's time (cProfile). Each folder stays open while its files are yielded."""
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


_NAME = operator.attrgetter("name")


def _walk(folder: Folder, prefix: str) -> Iterator[list[Found]]:
    try:
        entries = sorted(os.scandir(folder), key=_NAME)
    except OSError:
        return
    batch: list[Found] = []
    for entry in entries:
        name = entry.name
        try:
            if entry.is_symlink():
                if isinstance(folder, int):
                    target = os.readlink(name, dir_fd=folder)
                else:
                    target = os.readlink(entry.path)
                batch.append((prefix + name, folder, target, None))
            elif entry.is_file(follow_symlinks=False):
                batch.append((prefix + name, folder, name, entry.stat(follow_symlinks=False)))
            elif entry.is_dir(follow_symlinks=False):
                if name in _SKIPPED_DIRS:
                    continue
                if batch:  # what comes before the folder, before what is in it
                    yield batch
                    batch = []
                if isinstance(folder, str):
                    yield from _walk(entry.path, prefix + name + "/")
                    continue
                child = os.open(name, _FOLDER, dir_fd=folder)
                try:
                    yield from _walk(child, prefix + name + "/")
                finally:
                    os.close(child)
        except OSError:
            continue
    if batch:
        yield batch


def _read(folder: Folder, name: str) -> bytes | None:
    """The content of a plain file, never through a link; None when it is not one (any more).

    Read by descriptor, with no file object: `os.fdopen` and its `read()` stat the file twice more
    and seek once, and a long run reads a few hundred files, each syscall a few microseconds."""
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
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        # Its size, and a byte more: a file that grew since is read on until a read returns nothing,
        # so the content is whole however the size changed meanwhile.
        data = os.read(fd, info.st_size + 1)
        if not data:
            return data
        chunks = [data]
        while chunk := os.read(fd, max(info.st_size, 65536)):
            chunks.append(chunk)
        return data if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)
