"""Reading a workspace safely: its folders walked and its files read by descriptor, never through a
link, and each file's snapshot entry (its hash, and a small file's content)."""

from __future__ import annotations

import base64
import hashlib
import operator
import os
import stat
from collections.abc import Iterator
from typing import Any

MAX_FILE_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024
SKIPPED_DIRS = frozenset(
    {".git", "__pycache__", ".venv", "node_modules", ".agentevals"}
    | {".mypy_cache", ".ruff_cache", ".pytest_cache"}
)


def skipped_dir(name: str) -> bool:
    """A folder a workspace snapshot leaves out: version control, caches, and virtual environments by
    their usual names (`venv`, `.venv`, `.ci-venv`, `.ci-venv-floor`, `py311-venv`): a snapshot of a
    project's root taken with its environment inside held tens of thousands of installed files."""
    if name in SKIPPED_DIRS:
        return True
    lowered = name.lower()
    return lowered.endswith("venv") or "venv-" in lowered or lowered.startswith(("venv", ".venv"))


def entry_of(data: bytes, with_content: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    if with_content:
        try:
            entry["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            entry["base64"] = base64.b64encode(data).decode("ascii")
    return entry


# Where the platform allows it, folders are walked by descriptor and files opened without following a
# final link; elsewhere (Windows) by path, after checking each entry is no link.
BY_DESCRIPTOR = os.open in os.supports_dir_fd and os.scandir in os.supports_fd
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)

Folder = int | str  # a folder's descriptor, or its path
# (relative path, folder, name, stat) of a file, or (relative path, folder, the link's target, None)
Found = tuple[str, Folder, str, os.stat_result | None]


def walk_root(root: str) -> Iterator[list[Found]]:
    """Every file and link below `root`, in sorted order, a folder's consecutive ones a list: a long
    run snapshots its workspace at every checkpoint, and a generator's resumption per file was a
    third of a snapshot's time (cProfile). Each folder stays open while its files are yielded."""
    if not BY_DESCRIPTOR:
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
                if skipped_dir(name):
                    continue
                if batch:  # what comes before the folder, before what is in it
                    yield batch
                    batch = []
                if isinstance(folder, str):
                    yield from _walk(entry.path, prefix + name + "/")
                    continue
                child = os.open(name, FOLDER_FLAGS, dir_fd=folder)
                try:
                    yield from _walk(child, prefix + name + "/")
                finally:
                    os.close(child)
        except OSError:
            continue
    if batch:
        yield batch


HASH_CHUNK = 1024 * 1024  # a file past MAX_FILE_BYTES is hashed this much at a time


def file_entry(folder: Folder, name: str, with_content: bool) -> dict[str, Any] | None:
    """A plain file's snapshot entry, read never through a link; None when it is not one (any more).

    With `with_content` (a file of at most MAX_FILE_BYTES when it was listed) the file is read whole
    and its content kept; any other file is hashed as it is read, a HASH_CHUNK at a time, and only
    its size and SHA-256 kept, so a file of any size costs a chunk of memory (a 2 GiB file cost 4 GB
    read whole, and 8 GiB raised MemoryError). One that grew past MAX_FILE_BYTES since it was listed
    is hashed on the same way, without its content."""
    fd = _open_plain(folder, name)
    if fd is None:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha256()
        size = 0
        if with_content:
            data = _read_up_to(fd, MAX_FILE_BYTES + 1)
            if len(data) <= MAX_FILE_BYTES:
                return entry_of(data, True)
            digest.update(data)  # grew past the bound since it was listed: its hash only
            size = len(data)
        while chunk := os.read(fd, HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
        return {"sha256": digest.hexdigest(), "size": size}
    finally:
        os.close(fd)


def _open_plain(folder: Folder, name: str) -> int | None:
    try:
        if isinstance(folder, int):
            return os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=folder)
        path = os.path.join(folder, name)
        if os.path.islink(path):
            return None
        return os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None


def _read_up_to(fd: int, limit: int) -> bytes:
    """Up to `limit` bytes of the file, by descriptor, with no file object: `os.fdopen` and its
    `read()` stat the file twice more and seek once, and a long run reads a few hundred files."""
    data = os.read(fd, limit)
    if not data or len(data) == limit:
        return data
    chunks = [data]
    got = len(data)
    while got < limit and (chunk := os.read(fd, limit - got)):
        chunks.append(chunk)
        got += len(chunk)
    return data if len(chunks) == 1 else b"".join(chunks)
