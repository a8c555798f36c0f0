"""Snapshots of a workspace directory for checkpoints: every file's hash, and small files' content,
so a resume can restore the workspace and a contract can tell when it changed.

A long run checkpoints often while its workspace grows, so a snapshot reads again only the files
that changed since the last one (and the trace writer stores only what changed between two
checkpoints). On Linux the kernel says which changed (`watch.py`, with inotify); elsewhere,
or when the kernel refuses a watch, a file whose size and modification time are unchanged is not
read again.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from .files import BY_DESCRIPTOR, MAX_FILE_BYTES, MAX_TOTAL_BYTES, file_entry, walk_root
from .inotify import Inotify
from .watch import Unwatchable, Watcher


class Snapshotter:
    """Takes snapshots, remembering each file's entry between calls.

    With `watch` (the default) and inotify at hand, an entry is reused for as long as the kernel
    reports no event on its file (see `watch.py`). Otherwise it is reused only when the
    file's size and modification time are unchanged and that time was well before the entry was
    read: a file written again within the file system's timestamp granularity could otherwise keep
    its old time and be missed (git's "racy clean" rule). "Well before" is RACY_MARGIN_NS, or
    WHOLE_SECOND_MARGIN_NS for a time in whole seconds: the mark of a file system that keeps no finer
    (ext3, HFS+; FAT keeps two), where a file written again in the same second keeps its time.
    Whether an entry can be trusted is settled when it is read (its time is compared then, and the
    entry is used only while the time stays the same).

    A symbolic link is stored as a link, `{"link": "<its target, as written>"}`, never read through,
    and nothing outside the root is read: folders are opened relative to their parent's descriptor
    and files with O_NOFOLLOW, so a link swapped in during the walk is refused, not followed.

    `close()` ends the watching (the recorder closes its snapshotter when it stops); a snapshot after
    it starts again.
    """

    RACY_MARGIN_NS = 50_000_000
    WHOLE_SECOND_MARGIN_NS = 3_000_000_000

    def __init__(self, watch: bool = True) -> None:
        # Per root, per (relative path, with content): (mtime_ns, size, trusted, entry), `trusted`
        # when the time was well before the read, so the entry stands while size and time do.
        self._seen: dict[str, dict[tuple[str, bool], tuple[int, int, bool, dict[str, Any]]]] = {}
        self.watch = watch and BY_DESCRIPTOR
        self._watcher: Watcher | None = None
        self._owner = 0  # the process the watcher is for
        self._unwatched: set[str] = set()  # roots the kernel refused a watch in: walked
        self._lock = threading.Lock()  # checkpoints may come from several threads
        _SNAPSHOTTERS.add(self)

    @property
    def watching(self) -> bool:
        """Whether snapshots are kept true by inotify (else every file is stat'ed)."""
        return self._watcher is not None

    def snapshot(self, root: str | Path) -> dict[str, Any]:
        base = str(root)
        with self._lock:
            watcher = self._watching() if base not in self._unwatched else None
            if watcher is not None:
                try:
                    return {"root": base, "files": watcher.files(base)}
                except Unwatchable:
                    self._unwatched.add(base)
            return {"root": base, "files": self._walked(base)}

    def close(self) -> None:
        with self._lock:
            if self._watcher is not None:
                self._watcher.close()
                self._watcher = None
            self._unwatched.clear()

    def _watching(self) -> Watcher | None:
        if self._watcher is not None and self._owner != os.getpid():
            # A forked child shares the parent's queue: reading it would take the parent's events.
            self._watcher.close()  # (the child's copy of the descriptor; the parent keeps its own)
            self._watcher = None
        if self._watcher is None and self.watch:
            inotify = Inotify.open()
            if inotify is None:
                self.watch = False  # no inotify here: not asked again at every snapshot
                return None
            self._watcher, self._owner = Watcher(inotify), os.getpid()
        return self._watcher

    def _walked(self, base: str) -> dict[str, dict[str, Any]]:
        """The files, every one stat'ed, read again when its size or time says it may have changed."""
        files: dict[str, dict[str, Any]] = {}
        budget = MAX_TOTAL_BYTES
        seen = self._seen.setdefault(base, {})
        margin, whole_second_margin = self.RACY_MARGIN_NS, self.WHOLE_SECOND_MARGIN_NS
        for relative, folder, name, info in itertools.chain.from_iterable(walk_root(base)):
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
                read = file_entry(folder, name, with_content)
                if read is None:
                    continue  # vanished, unreadable or no longer a plain file: not in this snapshot
                entry = read
                racy = whole_second_margin if mtime % 1_000_000_000 == 0 else margin
                seen[key] = (mtime, size, mtime < read_at - racy, entry)
            if with_content:
                budget -= size
            files[relative] = entry
        return files


_SNAPSHOTTERS: weakref.WeakSet[Snapshotter] = weakref.WeakSet()


def _unlock_in_child() -> None:
    """A child forked while another thread snapshotted has the lock held by a thread it has not: a
    new lock (the watcher, the parent's, is left at the child's first snapshot)."""
    for snapshotter in _SNAPSHOTTERS:
        snapshotter._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unlock_in_child)
