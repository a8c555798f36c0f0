"""The daily cost ledger: what every run on this machine spent today, shared by concurrent processes.

One small JSON file (default `.agentevals/ledger.json`), read and rewritten under an exclusive
`fcntl.flock` on a lock file beside it, each rewrite atomic (a temporary file, then `os.replace`).
Per day it keeps the USD spent, the calls and runs counted, and whether the day's circuit breaker
tripped; per running run, the USD it holds (its calls in flight and the rest of its lease). What a
process that is gone (killed mid-run) held is counted as spent on its day: what it spent but never
settled is inside it, and a ledger errs on the side of having spent more, never less.

A ledger that cannot be read (corrupt, or locked longer than `lock_timeout` seconds) is an error
naming the file: spending is never silently reset to zero. Days older than `KEEP_DAYS` are pruned.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import LedgerError, LinkRefused
from ..fileio import make_folders, open_nofollow, refuse_links, write_atomic
from ..trace.loaders import load_json

LEDGER_VERSION = 1
KEEP_DAYS = 31
MAX_BYTES = 1 << 20  # a ledger is a few kilobytes; anything this large is not one of ours
DEFAULT_LOCK_TIMEOUT = 10.0
_FIX = "fix the JSON or move the file away by hand once you know what was spent today (docs/guards.md)"


@dataclass(frozen=True)
class DayState:
    """One day of the ledger, as a run sees it: spent, reserved by runs in flight, and the breaker."""

    day: str
    spent_usd: float
    reserved_usd: float
    tripped: dict[str, Any] | None


class DayLedger(Protocol):
    """What the day budget needs of a ledger: this file, or PostgreSQL (`pg_ledger.PostgresLedger`)."""

    @property
    def location(self) -> str:
        """Where it is kept, for messages (a file path, or a URL with its password redacted)."""
        ...

    def today(self) -> str: ...

    def start_run(self, run_id: str, limit: float) -> DayState | None: ...

    def hold(
        self,
        run_id: str,
        settle: list[tuple[str, float]],
        floor: float,
        need: float,
        want: float,
        limit: float,
    ) -> tuple[DayState, float | None]: ...

    def finish(self, run_id: str, settle: list[tuple[str, float]]) -> None: ...

    def state(self) -> DayState: ...

    def close(self) -> None: ...


class Ledger:
    """The ledger file at `path`. `today` and `lock_timeout` are injectable for tests."""

    def __init__(
        self,
        path: str | Path,
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        today: Callable[[], dt.date] = dt.date.today,
    ) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.lock_timeout = lock_timeout
        self._today = today
        self._lock_fd: int | None = None

    @property
    def location(self) -> str:
        return str(self.path)

    def today(self) -> str:
        return self._today().isoformat()

    # -- transactions ---------------------------------------------------------------------------

    def start_run(self, run_id: str, limit: float) -> DayState | None:
        """Count a run starting today, unless the day's breaker tripped (at this limit or a higher
        one) or today's spending reached `limit`: then the refusing day's state, and nothing counted."""
        with self._transaction() as data:
            day = self._day(data, self.today())
            state = self._state(data, self.today())
            tripped = day["tripped"]
            if (tripped is not None and float(tripped["limit_usd"]) >= limit) or state.spent_usd >= limit:
                return state
            day["runs"] += 1
            return None

    def hold(
        self,
        run_id: str,
        settle: list[tuple[str, float]],
        floor: float,
        need: float,
        want: float,
        limit: float,
    ) -> tuple[DayState, float | None]:
        """One transaction of a run: add its settled spending (`(day, usd)` each) to those days, then
        set what it holds in reservations today: `want` if today's spent + every other run's holdings
        + `want` stays within `limit`, else as much as there is room for down to `need`. Returns today's
        state (other runs' holdings as `reserved_usd`) and the amount held — or None when not even
        `need` fits: the run keeps `floor` (its calls in flight) and today's breaker trips."""
        with self._transaction() as data:
            for when, usd in settle:
                record = self._day(data, when)
                record["spent_usd"] = round(float(record["spent_usd"]) + usd, 10)
                record["calls"] += 1
            today = self.today()
            reservations = data["reservations"]
            reservations.pop(run_id, None)
            state = self._state(data, today)
            room = limit - state.spent_usd - state.reserved_usd
            granted: float | None = min(want, room) if room >= need else None
            if granted is None:
                entry = self._day(data, today)
                if entry["tripped"] is None or float(entry["tripped"]["limit_usd"]) < limit:
                    entry["tripped"] = {
                        "limit_usd": limit,
                        "run_id": run_id,
                        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    }
            held = floor if granted is None else granted
            if held > 0:
                reservations[run_id] = {"pid": os.getpid(), "usd": held, "day": today}
            return state, granted

    def finish(self, run_id: str, settle: list[tuple[str, float]]) -> None:
        """Add the run's last settled spending and drop whatever it still holds."""
        self.hold(run_id, settle, 0.0, 0.0, 0.0, float("inf"))
        self.close()

    def state(self) -> DayState:
        """Today's state (read under the lock, nothing changed)."""
        with self._transaction(write=False) as data:
            return self._state(data, self.today())

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- the file -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _transaction(self, write: bool = True) -> Iterator[dict[str, Any]]:
        fd = self._lock()
        try:
            data = self._load()
            if write:
                self._reap(data)
            yield data
            if write:
                self._prune(data)
                self._save(data)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def _lock(self) -> int:
        if self._lock_fd is None:
            try:
                # Never through a committed link: the lock (and the JSON, by write_atomic) is refused.
                make_folders(self.path.parent)
                refuse_links(self.path)
                self._lock_fd = open_nofollow(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except LinkRefused as exc:
                raise LedgerError(str(exc)) from None
            except OSError as exc:
                raise LedgerError(
                    f"cannot open the ledger lock {self.lock_path}: {exc.strerror} (make its directory "
                    "writable, or set [tool.agentevals] ledger to a writable path)"
                ) from None
        deadline = time.monotonic() + self.lock_timeout
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self._lock_fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LedgerError(
                        f"the ledger {self.path} is locked ({self.lock_path}) by another process for more "
                        f"than {self.lock_timeout:g} s; if no agentevals run is going, find what holds the "
                        "lock (fuser on the lock file) and stop it"
                    ) from None
                time.sleep(0.005)

    def _load(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read(MAX_BYTES + 1)
        except FileNotFoundError:
            return {"version": LEDGER_VERSION, "days": {}, "reservations": {}}
        except OSError as exc:
            raise LedgerError(f"cannot read the ledger {self.path}: {exc.strerror}") from None
        if len(raw) > MAX_BYTES:
            raise LedgerError(
                f"the ledger {self.path} is larger than {MAX_BYTES} bytes: not a ledger ({_FIX})"
            )

        def fail(line: int, problem: str) -> LedgerError:
            return LedgerError(f"the ledger {self.path} is corrupt: line {line} is {problem} ({_FIX})")

        data = load_json(raw, fail)
        problem = _problem(data)
        if problem:
            raise LedgerError(f"the ledger {self.path} is corrupt: {problem} ({_FIX})")
        return dict(data)

    def _save(self, data: dict[str, Any]) -> None:
        try:
            write_atomic(self.path, json.dumps(data, indent=1, sort_keys=True) + "\n")
        except LinkRefused as exc:
            raise LedgerError(str(exc)) from None
        except OSError as exc:
            raise LedgerError(f"cannot write the ledger {self.path}: {exc.strerror}") from None

    # -- the data -------------------------------------------------------------------------------

    @staticmethod
    def _day(data: dict[str, Any], day: str) -> dict[str, Any]:
        entry: dict[str, Any] = data["days"].setdefault(
            day, {"spent_usd": 0.0, "calls": 0, "runs": 0, "tripped": None}
        )
        return entry

    def _state(self, data: dict[str, Any], day: str) -> DayState:
        entry = data["days"].get(day) or {"spent_usd": 0.0, "tripped": None}
        reserved = sum(
            float(held["usd"]) for held in data["reservations"].values() if _alive(int(held["pid"]))
        )
        return DayState(day, float(entry["spent_usd"]), reserved, entry.get("tripped"))

    def _reap(self, data: dict[str, Any]) -> None:
        """Reservations of processes that are gone become spending on their day (never less)."""
        reservations = data["reservations"]
        for run_id, held in list(reservations.items()):
            if not _alive(int(held["pid"])):
                del reservations[run_id]
                record = self._day(data, str(held.get("day") or self.today()))
                record["spent_usd"] = round(float(record["spent_usd"]) + float(held["usd"]), 10)

    def _prune(self, data: dict[str, Any]) -> None:
        oldest = (self._today() - dt.timedelta(days=KEEP_DAYS)).isoformat()
        for day in [day for day in data["days"] if day < oldest]:
            del data["days"][day]


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _problem(data: Any) -> str | None:
    """What is wrong with a ledger's JSON, or None."""
    if not isinstance(data, dict):
        return "the top level is not an object"
    if data.get("version") != LEDGER_VERSION:
        return f"version {data.get('version')!r} is not {LEDGER_VERSION}"
    days, reservations = data.get("days"), data.get("reservations")
    if not isinstance(days, dict) or not isinstance(reservations, dict):
        return "days and reservations must be objects"
    for day, entry in days.items():
        try:
            dt.date.fromisoformat(day)
        except ValueError:
            return f"{day!r} is not a date"
        if not isinstance(entry, dict) or not all(
            _number(entry.get(key)) for key in ("spent_usd", "calls", "runs")
        ):
            return f"day {day}: spent_usd, calls and runs must be numbers >= 0"
        tripped = entry.get("tripped")
        if tripped is not None and not (isinstance(tripped, dict) and _number(tripped.get("limit_usd"))):
            return f"day {day}: tripped must be null or an object with limit_usd"
    for run_id, held in reservations.items():
        pid = held.get("pid") if isinstance(held, dict) else None
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not _number(held.get("usd")):
            return f"reservation {run_id!r}: needs a pid and usd >= 0"
        try:
            dt.date.fromisoformat(str(held.get("day", "1970-01-01")))
        except ValueError:
            return f"reservation {run_id!r}: {held.get('day')!r} is not a date"
    return None
