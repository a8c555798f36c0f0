"""Atomic file writes: a reader sees the old file or the new one, never half of one.

A file is written to a temporary name in its own folder (so the rename never crosses file systems),
flushed to disk, then renamed over the target with `os.replace`. On any failure the temporary file is
removed and the target is left as it was. Under pytest-xdist or two concurrent sessions, each writer
gets a temporary name of its own, so two writers never write into one temporary file.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` to write to (by any means); on a clean exit it is synced and
    renamed over `path`, on an exception removed. The folder of `path` must exist."""
    path = Path(path)
    temp = _new_temp(path)
    try:
        yield temp
        _fsync(temp)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` (text as UTF-8) to `path` atomically."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as temp:
        temp.write_bytes(raw)


def _new_temp(path: Path) -> Path:
    """A new empty file beside `path`, with the permissions a plain `open` would give (the umask's,
    unlike `tempfile.mkstemp`'s owner-only ones)."""
    while True:
        temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return temp


def _fsync(path: Path) -> None:
    with path.open("rb+") as handle:
        os.fsync(handle.fileno())
