"""Linux's inotify, through the C library: which names in the watched folders changed since the last
look. Workspace snapshots use it (`watch.py`) so a checkpoint need not stat every file.

Only what a snapshot needs is bound: one instance, a watch per folder (added on an open descriptor,
so it is the folder that was opened, whatever its path points at by then), and the queue read
without waiting. A mount or unmount, which inotify does not report (a folder mounted over keeps
its watch on the folder now hidden), is told by polling /proc/self/mountinfo. Where inotify is
missing (another system, no C library, no /proc, the limit of instances reached), `Inotify.open()`
gives None and snapshots stat every file instead.
"""

from __future__ import annotations

import os
import select
import struct
import sys
import weakref
from collections.abc import Callable, Iterator

# <sys/inotify.h>
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000

# Everything that can change what a snapshot holds: a file's bytes (a write, a truncate, a close
# after writing), its time or mode (`touch`, `chmod`), and the names in a folder.
WATCHED = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
# The folder itself went (deleted, moved, or its watch removed): its names are no longer its path's.
GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len: struct inotify_event before its name
_READ_BYTES = 64 * 1024

Event = tuple[int, int, str]  # watch descriptor, mask, the name in the folder ("" for the folder)


class Inotify:
    """One inotify instance: add watches on folders, read what happened since the last read."""

    def __init__(
        self,
        fd: int,
        add_watch: Callable[[int, bytes, int], int],
        rm_watch: Callable[[int, int], int],
        mounts: int,
    ) -> None:
        self.fd = fd
        self._add_watch = add_watch
        self._rm_watch = rm_watch
        self._mounts = mounts  # /proc/self/mountinfo, open: polled, never read
        self._poll = select.poll()
        self._poll.register(mounts, select.POLLPRI)
        # Closed when let go without close() too: a user has 128 instances (fs.inotify.max_user_instances).
        self._close = weakref.finalize(self, _close_all, fd, mounts)

    @classmethod
    def open(cls) -> Inotify | None:
        """An instance, or None where there is no inotify to be had."""
        if not sys.platform.startswith("linux") or not os.path.isdir("/proc/self/fd"):
            return None
        import ctypes  # here: 3 ms to import, for a recording that snapshots a workspace on Linux

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init1, add_watch = libc.inotify_init1, libc.inotify_add_watch
            rm_watch = libc.inotify_rm_watch
        except (OSError, AttributeError):
            return None
        init1.argtypes, init1.restype = [ctypes.c_int], ctypes.c_int
        add_watch.argtypes, add_watch.restype = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32], ctypes.c_int
        rm_watch.argtypes, rm_watch.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        fd = init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:  # EMFILE: the user's limit of instances (128 by default) is reached
            return None
        try:
            mounts = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            os.close(fd)
            return None
        return cls(fd, add_watch, rm_watch, mounts)

    def watch(self, folder_fd: int) -> int | None:
        """A watch on the folder open as `folder_fd` (its descriptor, 0 or more), or None when the
        kernel refuses one (ENOSPC: the limit of watches is reached)."""
        wd = self._add_watch(self.fd, f"/proc/self/fd/{folder_fd}".encode("ascii"), WATCHED)
        return wd if wd >= 0 else None

    def unwatch(self, wd: int) -> None:
        """Remove a watch; one the kernel removed already (its folder deleted) is no error."""
        self._rm_watch(self.fd, wd)

    def read(self) -> Iterator[Event]:
        """Every event queued since the last read, without waiting for more."""
        while True:
            try:
                data = os.read(self.fd, _READ_BYTES)
            except BlockingIOError:
                return
            yield from parse(data)
            if len(data) < _READ_BYTES // 2:
                # The kernel hands over whole events, as many as fit: a read that left most of the
                # buffer empty took the whole queue (one more read would only say "nothing").
                return

    def mounts_changed(self) -> bool:
        """Whether a file system was mounted or unmounted since the last call (or the opening): the
        kernel marks the open table once per change, and a poll takes the mark."""
        return bool(self._poll.poll(0))

    def close(self) -> None:
        self._close()  # the descriptors, and with them every watch (once: a second call does nothing)


def _close_all(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


def parse(data: bytes) -> Iterator[Event]:
    """The events in what one read() returned. A short or torn buffer (which the kernel never
    gives) ends the events, and is reported as an overflow, so the caller trusts none of its cache."""
    at, end = 0, len(data)
    while at < end:
        if at + _HEADER.size > end:
            yield -1, IN_Q_OVERFLOW, ""
            return
        wd, mask, _cookie, length = _HEADER.unpack_from(data, at)
        at += _HEADER.size
        if at + length > end:
            yield -1, IN_Q_OVERFLOW, ""
            return
        name = data[at : at + length].rstrip(b"\0")
        at += length
        yield wd, mask, os.fsdecode(name)
