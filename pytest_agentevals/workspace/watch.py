"""Workspace snapshots that look only at what changed: the workspace's folders watched with inotify,
and each snapshot looking again at the names the kernel reported since the last one.

A tree per root mirrors the workspace: per folder its names, each a file (its entry once read), a
link's target or a folder of its own. An event on a name (written, touched, created, deleted, moved
in or out) marks it; the next snapshot looks again at the marked names only (an lstat each), reads
the marked files and takes everything else from the tree. A long run's snapshot was an lstat per
file (the syscalls, a few microseconds each, were most of it); now it is one read of the queue and
one lstat per changed name, and when nothing changed a copy of the last snapshot's files. What a
snapshot holds is what a walk of the whole workspace gives (`files.walk_root`): the same
files and links, in the same order, with the same entries.

A file's entry is trusted for as long as no event names it: the watch is in place before the
folder is listed, and a write's event is queued before the write returns, so a file written at any
time after its read is read again at the next snapshot. When events may have been lost (the queue
overflowed, the root's watch went) or none is sent (a file system mounted or unmounted), the tree is
dropped and the workspace read again whole; so is a folder's when its watch went (deleted: a folder
made again at its name may get the same inode number) or its mode changed (which of its names can be
read). A write is reported on the folder of the
name it went through only, so a file with more than one name (hard links) is read again at every
snapshot, and its other names too when it gets a new one. What inotify cannot see: a write through a
shared memory mapping that has not reached the file yet, a write through a hard link made since the
file was read that is not in the workspace at the next snapshot (made outside it, or moved out), and
changes made by another machine to a network file system (see docs/trace-format.md).
"""

from __future__ import annotations

import os
import stat
from typing import Any

from .files import FOLDER_FLAGS, MAX_FILE_BYTES, MAX_TOTAL_BYTES, file_entry, skipped_dir
from .inotify import GONE, IN_ATTRIB, IN_DELETE_SELF, IN_IGNORED, IN_Q_OVERFLOW, Inotify

# A folder's own events after which nothing below it is trusted: its watch went, or its mode changed.
_FORGOTTEN = IN_DELETE_SELF | IN_IGNORED | IN_ATTRIB


class _File:
    __slots__ = ("entry", "ino", "linked", "size", "with_content")

    def __init__(self, info: os.stat_result) -> None:
        self.size = info.st_size  # as the folder's listing or an lstat gave it: what the budget counts
        self.ino = info.st_ino
        # A write is reported on the folder of the name it went through only: a file with other
        # names (hard links) is looked at again at every snapshot.
        self.linked = info.st_nlink > 1
        self.entry: dict[str, Any] | None = None  # None until read
        self.with_content = False


class _Link:
    __slots__ = ("target",)

    def __init__(self, target: str) -> None:
        self.target = target


class _Folder:
    __slots__ = (
        "full",
        "ident",
        "listed",
        "marked",
        "name",
        "names",
        "order",
        "parent",
        "pending",
        "small",
        "wd",
    )

    def __init__(self, name: str, parent: _Folder | None) -> None:
        self.name = name
        self.parent = parent
        self.names: dict[str, _File | _Link | _Folder] = {}
        self.order: list[str] | None = None  # the names sorted, until one comes or goes
        self.marked: set[str] = set()  # names an event reported since the last look
        self.listed = False  # its names read (else it is listed at the next visit)
        self.pending = True  # it or a folder below has something to look at: it must be opened
        self.ident: tuple[int, int] | None = None  # (st_dev, st_ino), once opened
        self.wd: int | None = None
        self.small = 0  # at the last visit: the sizes of the files small enough for content, below
        self.full = False  # ...and whether every one of them had room for its content then


class Unwatchable(Exception):
    """The kernel refused a watch (the limit of watches is reached): stat every file instead."""


class Watcher:
    """The trees of the roots snapshotted, and the one inotify instance that keeps them true."""

    def __init__(self, inotify: Inotify) -> None:
        self._inotify = inotify
        self._roots: dict[str, _Folder] = {}
        self._by_wd: dict[int, list[_Folder]] = {}
        self._new_links: set[int] = set()  # inode numbers of files seen under a name more
        self._last: dict[str, dict[str, dict[str, Any]]] = {}  # per root, its last snapshot's files

    def close(self) -> None:
        self._inotify.close()
        self._roots.clear()
        self._by_wd.clear()
        self._last.clear()

    def files(self, root: str) -> dict[str, dict[str, Any]]:
        """The snapshot's files of `root` (see the module's docstring). Raises Unwatchable."""
        self._drain()
        try:
            fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            self._forget(root)
            return {}
        try:
            node = self._roots.get(root)
            if node is None:
                node = self._roots[root] = _Folder("", None)
            # The path may open another folder with no event on the one watched (a folder above it
            # renamed, a link on the way pointed elsewhere, a relative path after a chdir).
            info = os.fstat(fd)
            if node.ident not in (None, (info.st_dev, info.st_ino)):
                self._reset(node)
            last = self._last.get(root)
            if last is not None and not node.pending:
                return dict(last)  # nothing below changed: the same files (a copy: a twentieth of a visit)
            files: dict[str, dict[str, Any]] = {}
            try:
                self._visit(node, fd, "", files, MAX_TOTAL_BYTES)
                if self._new_links:
                    # A file got a name more: its other names, read while it had one, are told
                    # nothing of a write through it, so they are looked at again (and from now on).
                    inos, self._new_links = self._new_links, set()
                    for tree in self._roots.values():
                        _mark_links(tree, inos)
                    files = {}
                    self._visit(node, fd, "", files, MAX_TOTAL_BYTES)
            except Unwatchable:
                self._forget(root)
                raise
            if not node.pending:
                self._last[root] = dict(files)
            return files
        finally:
            os.close(fd)

    # -- events ----------------------------------------------------------------------------------

    def _drain(self) -> None:
        by_wd = self._by_wd
        if self._inotify.mounts_changed():
            for node in self._roots.values():
                self._reset(node)  # a folder may have been mounted over, or uncovered: no event says
        for wd, mask, name in self._inotify.read():
            if mask & IN_Q_OVERFLOW:
                for node in self._roots.values():
                    self._reset(node)  # events were lost: trust nothing
                continue
            for node in tuple(by_wd.get(wd, ())):
                if name:
                    node.marked.add(name)
                    _pend(node)
                elif mask & _FORGOTTEN or (mask & GONE and node.parent is None):
                    # Its watch went (and a folder made at its name may get its inode number, so
                    # look the same), or its mode changed what can be read below it, or the root
                    # moved: what its tree holds is no longer kept true.
                    self._reset(node)
                if node.parent is not None and not name and mask & (GONE | IN_ATTRIB):
                    node.parent.marked.add(node.name)  # (its parent is told too; to be sure)
                    _pend(node.parent)

    # -- the tree ----------------------------------------------------------------------------------

    def _visit(self, node: _Folder, fd: int, prefix: str, files: dict[str, Any], budget: int) -> int:
        """Bring `node` (open as `fd`) up to date and add its files to `files`; the budget left."""
        budget_in = budget
        if node.pending:
            info = os.fstat(fd)
            ident = (info.st_dev, info.st_ino)
            if node.ident is not None and node.ident != ident:
                self._reset(node)  # another folder than the one watched (a root's path reused)
            node.ident = ident
            if not node.listed:
                self._list(node, fd)
            elif node.marked:
                self._look_again(node, fd)
        pending = bool(node.marked)  # a name that could not be looked at is looked at next time
        small = 0  # the sizes of the files small enough for content, here and below
        names = node.names
        order = node.order
        if order is None:
            order = node.order = sorted(names)
        for name in order:
            item = names[name]
            if type(item) is _File:
                size = item.size
                with_content = size <= MAX_FILE_BYTES and size <= budget
                entry = item.entry
                if entry is None or item.with_content != with_content:
                    entry = self._read(fd, name, item, with_content)
                    if entry is None:
                        node.marked.add(name)  # vanished, or no longer a plain file: next time
                        pending = True
                        continue
                if with_content:
                    budget -= size
                if size <= MAX_FILE_BYTES:
                    small += size
                files[prefix + name] = entry
                if item.linked:
                    node.marked.add(name)
                    pending = True
            elif type(item) is _Link:
                files[prefix + name] = {"link": item.target}
            else:
                assert isinstance(item, _Folder)
                if not item.pending and item.full and budget >= item.small:
                    _cached(item, prefix + name + "/", files)  # as read, every small file's content
                    budget -= item.small
                    small += item.small
                    continue
                try:
                    child = os.open(name, FOLDER_FLAGS, dir_fd=fd)
                except OSError:
                    node.marked.add(name)  # gone, or no longer a folder: looked at next time
                    pending = True
                    continue
                try:
                    budget = self._visit(item, child, prefix + name + "/", files, budget)
                finally:
                    os.close(child)
                small += item.small
                pending = pending or item.pending
        node.pending, node.small, node.full = pending, small, budget_in >= small
        return budget

    def _list(self, node: _Folder, fd: int) -> None:
        """Watch the folder, then read its names (so nothing that changes after is missed)."""
        if node.wd is None:
            wd = self._inotify.watch(fd)
            if wd is None:
                raise Unwatchable
            node.wd = wd
            self._by_wd.setdefault(wd, []).append(node)
        node.marked.clear()
        try:
            entries = list(os.scandir(fd))
        except OSError:
            node.names, node.order = {}, None
            return  # unreadable: nothing of it, as a walk would give (it is listed again next time)
        names: dict[str, _File | _Link | _Folder] = {}
        for entry in entries:
            name = entry.name
            try:
                if entry.is_symlink():
                    names[name] = _Link(os.readlink(name, dir_fd=fd))
                elif entry.is_file(follow_symlinks=False):
                    item = names[name] = _File(entry.stat(follow_symlinks=False))
                    if item.linked:
                        self._new_links.add(item.ino)
                elif entry.is_dir(follow_symlinks=False) and not skipped_dir(name):
                    names[name] = _Folder(name, node)
            except OSError:
                node.marked.add(name)  # went while it was listed: looked at again next time
        node.names, node.order, node.listed = names, None, True

    def _look_again(self, node: _Folder, fd: int) -> None:
        names = node.names
        marked, node.marked = node.marked, set()
        for name in marked:
            old = names.pop(name, None)
            new: _File | _Link | _Folder | None = None
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                mode = info.st_mode
                if stat.S_ISLNK(mode):
                    new = _Link(os.readlink(name, dir_fd=fd))
                elif stat.S_ISREG(mode):
                    new = _File(info)
                    if new.linked and not (type(old) is _File and old.ino == new.ino):
                        self._new_links.add(new.ino)  # a name more, or one it had not
                elif stat.S_ISDIR(mode) and not skipped_dir(name):
                    same = isinstance(old, _Folder) and old.ident == (info.st_dev, info.st_ino)
                    new = old if same else _Folder(name, node)
            except FileNotFoundError:
                pass
            except OSError:
                node.marked.add(name)  # could not be looked at: next time
            if isinstance(old, _Folder) and new is not old:
                self._drop(old)
            if new is not None:
                names[name] = new
            if (old is None) != (new is None):
                node.order = None

    def _read(self, fd: int, name: str, item: _File, with_content: bool) -> dict[str, Any] | None:
        entry = file_entry(fd, name, with_content)
        if entry is None:
            item.entry = None
            return None
        item.entry, item.with_content = entry, with_content
        return item.entry

    def _reset(self, node: _Folder) -> None:
        """Forget what `node` holds: it is listed and its files read again at the next visit."""
        self._drop(node)  # its own watch too: the folder now at its path may be another
        node.names, node.order, node.marked, node.listed, node.ident = {}, None, set(), False, None
        _pend(node)

    def _drop(self, node: _Folder) -> None:
        """`node` and the folders below it leave the tree; their events are not looked at again."""
        for item in node.names.values():
            if isinstance(item, _Folder):
                self._drop(item)
        if node.wd is not None:
            holders = self._by_wd.get(node.wd, [])
            if node in holders:
                holders.remove(node)
            if not holders:
                self._by_wd.pop(node.wd, None)
                self._inotify.unwatch(node.wd)
            node.wd = None

    def _forget(self, root: str) -> None:
        self._last.pop(root, None)
        node = self._roots.pop(root, None)
        if node is not None:
            self._drop(node)


def _pend(node: _Folder | None) -> None:
    while node is not None and not node.pending:
        node.pending = True
        node = node.parent


def _mark_links(node: _Folder, inos: set[int]) -> None:
    """Mark the files below `node` with one of these inode numbers, to be looked at again."""
    for name, item in node.names.items():
        if type(item) is _File:
            if item.ino in inos:
                node.marked.add(name)
                _pend(node)
        elif type(item) is _Folder:
            _mark_links(item, inos)


def _cached(node: _Folder, prefix: str, files: dict[str, Any]) -> None:
    """A folder's files as the tree holds them: nothing in it changed, and nothing is to be read."""
    order = node.order
    if order is None:
        order = node.order = sorted(node.names)
    names = node.names
    for name in order:
        item = names[name]
        if type(item) is _File:
            files[prefix + name] = item.entry
        elif type(item) is _Link:
            files[prefix + name] = {"link": item.target}
        else:
            assert isinstance(item, _Folder)
            _cached(item, prefix + name + "/", files)
