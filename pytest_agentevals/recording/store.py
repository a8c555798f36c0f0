"""A service's recordings: one trace per session in one folder, named from the session id made safe,
kept within a count, a size and an age (docs/service.md).

`RunStore(folder, keep=..., max_bytes=..., max_age=...)` and then, for each session,
`with store.run(session_id, agent=..., task=...) as recorder:` — a `Recorder` of its own, in the
context of the code that opened it (so sessions side by side each record their own, see `active.py`),
flushed event by event like every trace, with guards made fresh for it from the store's budget
(budgets per session; a daily budget's ledger is one file, shared by every session and process).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import threading
import time
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import RecordingError
from ..guards.protocol import Guard
from ..settings.budgets import Budget
from ..trace.naming import TRACE_SUFFIX
from .recorder import Recorder

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SLUG_AT_MOST = 64


def safe_name(session_id: str) -> str:
    """A file name stem for a session id: the id's letters, digits, `.`, `_` and `-` (anything else
    a `_`; no leading dot, so never `..` or hidden), at most 64 of them, then 12 hex digits of the
    id's SHA-256, so distinct ids never share a stem, whatever was cut or replaced."""
    if not isinstance(session_id, str) or not session_id:
        raise RecordingError(f"a session id must be a non-empty string, got {session_id!r}")
    ascii_id = unicodedata.normalize("NFKD", session_id).encode("ascii", "ignore").decode()
    slug = _UNSAFE.sub("_", ascii_id).lstrip(".")[:_SLUG_AT_MOST].strip("_") or "session"
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slug}-{digest}"


def _seconds(age: float | dt.timedelta | None) -> float | None:
    if age is None:
        return None
    seconds = age.total_seconds() if isinstance(age, dt.timedelta) else float(age)
    if seconds <= 0:
        raise ValueError(f"max_age must be > 0 seconds, got {age!r}")
    return seconds


class RunStore:
    """One trace per session in `folder`. Retention, applied when a session ends (and on `prune()`),
    deletes the oldest finished traces until at most `keep` remain, their sizes add up to at most
    `max_bytes`, and none is older than `max_age` (seconds or a timedelta); an open session's trace is
    never deleted. `budget` limits each session (a `Budget`; its `max_daily_cost_usd` is kept in the
    day ledger `ledger`, across all sessions); `guards` are added to each session's own."""

    def __init__(
        self,
        folder: str | Path,
        *,
        keep: int | None = None,
        max_bytes: int | None = None,
        max_age: float | dt.timedelta | None = None,
        budget: Budget | None = None,
        ledger: str | Path | None = None,
        **recorder_options: Any,
    ) -> None:
        if keep is not None and keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep!r}")
        if max_bytes is not None and max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes!r}")
        self.folder = Path(folder)
        self.keep = keep
        self.max_bytes = max_bytes
        self.max_age = _seconds(max_age)
        self.budget = budget
        self.ledger = ledger
        if budget is not None and budget.max_daily_cost_usd is not None and ledger is None:
            raise ValueError("RunStore(budget=...) with max_daily_cost_usd needs ledger= (a file path)")
        self._options = recorder_options
        self._lock = threading.Lock()
        self._open: set[Path] = set()
        # The order this process finished its sessions in: file times tie within the kernel's coarse
        # clock (a few ms), so two sessions ending close together are told apart by this.
        self._ended: dict[Path, int] = {}
        self._ends = 0
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RecordingError(f"cannot create the run store {self.folder}: {exc.strerror}") from None
        if self.folder.is_symlink() or not self.folder.is_dir():
            raise RecordingError(f"the run store {self.folder} is not a directory (a link is not followed)")

    def path_for(self, session_id: str) -> Path:
        """Where a new run of `session_id` would be written (a new file: `.2`, `.3`... for a repeat)."""
        stem = safe_name(session_id)
        for n in range(1, 10_000):
            path = self.folder / (stem + (f".{n}" if n > 1 else "") + TRACE_SUFFIX)
            if not os.path.lexists(path) and path not in self._open:
                return path
        raise RecordingError(f"{self.folder}: 10,000 traces of session {session_id!r} already: prune them")

    def _reserve(self, session_id: str) -> Path:
        with self._lock:
            while True:
                path = self.path_for(session_id)
                try:  # created here, never followed: another process's file of the same name is left alone
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0))
                except FileExistsError:
                    continue
                os.close(fd)
                self._open.add(path)
                return path

    @contextmanager
    def run(
        self,
        session_id: str,
        *,
        agent: str = "agent",
        task: Any = None,
        seed: int | None = None,
        contract: Mapping[str, Any] | None = None,
        guards: Sequence[Guard] = (),
        **options: Any,
    ) -> Iterator[Recorder]:
        """Record one session: a started `Recorder` for the block, stopped (and retention applied)
        when it ends; an exception in the block ends the run `error` and goes on up."""
        path = self._reserve(session_id)
        try:
            recorder = Recorder(
                path,
                agent=agent,
                task=task,
                seed=seed,
                contract=contract,
                guards=[*self._guards(), *guards],
                session=session_id,
                **{**self._options, **options},
            )
            with recorder:
                yield recorder
        finally:
            with self._lock:
                self._open.discard(path)
                self._ended[path] = self._ends = self._ends + 1
            self.prune()

    def _guards(self) -> list[Guard]:
        if self.budget is None:
            return []
        from ..guards.build import guards_for  # the guards' modules load with the first budget

        return guards_for(self.budget, ledger=self.ledger)

    def traces(self) -> list[Path]:
        """The store's trace files (links excluded), oldest first (by modification time)."""
        found = []
        for path in self.folder.glob("*" + TRACE_SUFFIX):
            try:
                stat = path.lstat()
            except OSError:
                continue
            if path.is_file() and not path.is_symlink():
                found.append((stat.st_mtime_ns, self._ended.get(path, -1), path.name, path))
        return [path for *_, path in sorted(found)]

    def prune(self) -> list[Path]:
        """Apply retention now; the deleted traces."""
        now = time.time()
        with self._lock:
            open_now = set(self._open)
        finished = []
        for path in self.traces():
            if path in open_now:
                continue
            try:
                stat = path.lstat()
            except OSError:
                continue
            finished.append((path, stat.st_size, stat.st_mtime))
        total = sum(size for _, size, _ in finished)
        count = len(finished)
        deleted = []
        for path, size, mtime in finished:  # oldest first
            too_many = self.keep is not None and count > self.keep
            too_big = self.max_bytes is not None and total > self.max_bytes
            too_old = self.max_age is not None and now - mtime > self.max_age
            if not (too_many or too_big or too_old):
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise RecordingError(f"cannot delete the old trace {path}: {exc.strerror}") from None
            self._ended.pop(path, None)
            count -= 1
            total -= size
            deleted.append(path)
        return deleted
