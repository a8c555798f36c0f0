"""Atomic file writes: a reader sees the old file or the new one, never half of one.

A file is written to a temporary name in its own folder (so the rename never crosses file systems),
flushed to disk, then renamed over the target with `os.replace`. On any failure the temporary file is
removed and the target is left as it was. Under pytest-xdist or two concurrent sessions, each writer
gets a temporary name of its own, so two writers never write into one temporary file.

Never through a link: a repository can commit a symbolic link where a store lives (`.agentevals/`,
cassettes, goldens, fixtures), and following it would write (or boot) outside the tree. So the file
itself and every folder between the root (the working directory, which is pytest's rootdir in a
session, unless told) and it are checked, and a link is refused with `LinkRefused`. Folders above
the root are the machine's own layout (a home folder or /tmp may well be a link) and are trusted.
Files are opened with `O_NOFOLLOW`, so the last component cannot be swapped for a link after the
check; the folders are checked with `lstat`, which is enough against committed links.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import LinkRefused


@contextmanager
def atomic_path(path: Path, root: Path | None = None) -> Iterator[Path]:
    """A temporary path beside `path` to write to (by any means); on a clean exit it is synced and
    renamed over `path`, on an exception removed. The folder of `path` must exist. Links are refused
    as `refuse_links(path, root)` does."""
    path = Path(path)
    refuse_links(path, root)
    temp = _new_temp(path)
    try:
        yield temp
        _fsync(temp)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: str | bytes, root: Path | None = None) -> None:
    """Write `data` (text as UTF-8) to `path` atomically, never through a link (`refuse_links`)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path, root) as temp:
        temp.write_bytes(raw)


def refuse_links(path: Path, root: Path | None = None) -> None:
    """Raise `LinkRefused` if `path`, or a folder between `root` (default: the working directory)
    and it, is a symbolic link. A path outside `root` has only its last component checked."""
    path = Path(os.path.abspath(path))
    base = Path(os.path.abspath(root if root is not None else os.getcwd()))
    candidates = [path]
    try:
        inside = path.relative_to(base)
    except ValueError:
        inside = None
    if inside is not None:
        current = base
        for part in inside.parts[:-1]:
            current = current / part
            candidates.append(current)
    for candidate in candidates:
        if candidate.is_symlink():
            raise LinkRefused(candidate, os.readlink(candidate))


def open_nofollow(path: Path, flags: int, mode: int = 0o666, root: Path | None = None) -> int:
    """`os.open(path, flags | O_NOFOLLOW, mode)` after `refuse_links(path, root)`; a link found at
    the last moment is refused the same way."""
    refuse_links(path, root)
    try:
        return os.open(path, flags | os.O_NOFOLLOW, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise LinkRefused(path, os.readlink(path)) from None
        raise


def make_folders(folder: Path, root: Path | None = None) -> None:
    """`folder.mkdir(parents=True, exist_ok=True)`, refusing a link on the way (a folder created
    through a committed link would land outside the tree)."""
    refuse_links(folder, root)
    Path(folder).mkdir(parents=True, exist_ok=True)


def remove_tree(root: Path) -> None:
    """Remove `root` and everything below it, best effort, never following a link. Iterative:
    `shutil.rmtree` recurses once per level on Python 3.11, and a deep hostile tree overflowed it."""
    pending: list[tuple[str, bool]] = [(os.fspath(root), False)]
    while pending:
        path, emptied = pending.pop()
        try:
            if emptied:
                os.rmdir(path)
            elif not stat.S_ISDIR(os.lstat(path).st_mode):
                os.unlink(path)
            else:
                pending.append((path, True))
                with os.scandir(path) as entries:
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            pending.append((entry.path, False))
                        else:
                            os.unlink(entry.path)
        except OSError:
            continue  # gone already, or not ours to remove: what is left stays, as rmtree's ignore_errors


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
