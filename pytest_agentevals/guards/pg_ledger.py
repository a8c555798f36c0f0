"""The day ledger in PostgreSQL: one day budget for every run on every machine that names the URL.

The same transactions as the file ledger (`ledger.Ledger`: `start_run`, `hold`, `finish`, `state`),
each one database transaction, with none of its single-machine limits:

- **Atomic day buckets.** A lease is granted by one conditional statement on the day's row,
  `UPDATE days SET reserved = reserved + least(want, limit - spent - reserved) WHERE ... AND
  limit - spent - reserved >= need`: the row lock serializes racing runs, and the condition is
  evaluated on the row as the last committed writer left it. There is no read-modify-write window.
- **Leases keyed by run and number.** Each transaction of a run carries the run's next lease number;
  `leases (run_id, lease)` is its primary key, so a transaction retried after a lost connection (its
  commit may have landed) is recognized and answers what it answered the first time: a retried
  settlement never counts twice.
- **A killed run's reservation is spent, and visible.** A run's holding records the server backend
  (`pg_backend_pid()` and its start time) of the connection it holds for the whole run; a holding
  whose backend is gone (the process was killed, its machine lost) is moved to spent on its day, and
  counted in `reaped_usd` there, by the next transaction of any run.
- **Fail closed.** A ledger that cannot be reached, or does not answer within its timeouts (a lock
  held elsewhere, a stalled server: `DbTimeouts`), raises `LedgerError` naming the server (password
  redacted) and the timeout: a run under `max_daily_cost_usd` does not start, or stops.
  `ledger_unreachable = "run"` chooses otherwise at the start (see `daily.DailyBudget`).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .. import pg
from ..errors import LedgerError
from ..settings.dburl import DatabaseURL
from .ledger import KEEP_DAYS, DayState
from .pg_ledger_schema import EXPECTED

if TYPE_CHECKING:
    import psycopg

SCHEMA = "agentevals_ledger"
SCHEMA_VERSION = 1
LOCK_KEY = 0x616765766C6564  # pg_advisory_xact_lock key of the ledger's migrations ("agevled")

MIGRATIONS: tuple[str, ...] = (
    f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE TABLE {SCHEMA}.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE {SCHEMA}.days (
    day           date PRIMARY KEY,
    spent_usd     double precision NOT NULL DEFAULT 0 CHECK (spent_usd >= 0),
    reserved_usd  double precision NOT NULL DEFAULT 0,
    reaped_usd    double precision NOT NULL DEFAULT 0,
    calls         bigint NOT NULL DEFAULT 0,
    runs          bigint NOT NULL DEFAULT 0,
    last_grant    double precision,
    tripped_limit double precision,
    tripped_run   text,
    tripped_at    timestamptz
);
CREATE TABLE {SCHEMA}.holdings (
    run_id        text PRIMARY KEY,
    day           date NOT NULL,
    usd           double precision NOT NULL CHECK (usd >= 0),
    backend       integer NOT NULL,
    backend_start timestamptz,
    host          text NOT NULL,
    pid           integer NOT NULL
);
CREATE TABLE {SCHEMA}.leases (
    run_id   text NOT NULL,
    lease    bigint NOT NULL,
    day      date NOT NULL,
    granted  double precision,
    spent    double precision,
    reserved double precision,
    PRIMARY KEY (run_id, lease)
);
""",
)

T = TypeVar("T")


class PostgresLedger:
    """The day ledger in the database at `url`. It connects on first use and keeps that connection
    for the run: its backend is how other runs tell this one is alive."""

    def __init__(self, url: DatabaseURL, *, today: Callable[[], dt.date] = dt.date.today) -> None:
        self.url = url
        self._today = today
        self._session: pg.Session | None = None
        self._lease = 0

    @property
    def location(self) -> str:
        return str(self.url)

    def today(self) -> str:
        return self._today().isoformat()

    # -- transactions ---------------------------------------------------------------------------

    def start_run(self, run_id: str, limit: float) -> DayState | None:
        def run(cur: psycopg.Cursor[Any]) -> DayState | None:
            today = self._today()
            self._reap(cur)
            self._ensure_day(cur, today)
            cur.execute(
                f"UPDATE {SCHEMA}.days SET runs = runs + 1 WHERE day = %s "
                "AND NOT coalesce(tripped_limit >= %s, false) AND spent_usd < %s RETURNING day",
                (today, limit, limit),
            )
            if cur.fetchone() is not None:
                return None
            return self._state(cur, today)

        return self._transaction("start a run in", run)

    def hold(
        self,
        run_id: str,
        settle: list[tuple[str, float]],
        floor: float,
        need: float,
        want: float,
        limit: float,
    ) -> tuple[DayState, float | None]:
        """As `Ledger.hold`: settle, then hold `want` (down to `need`) within `limit` — or trip the
        day's breaker, keeping `floor`."""
        self._lease += 1
        lease = self._lease

        def run(cur: psycopg.Cursor[Any]) -> tuple[DayState, float | None]:
            today = self._today()
            cur.execute(
                f"INSERT INTO {SCHEMA}.leases (run_id, lease, day) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING RETURNING lease",
                (run_id, lease, today),
            )
            if cur.fetchone() is None:  # a retry of a transaction that committed: answer the same
                cur.execute(
                    f"SELECT granted, spent, reserved FROM {SCHEMA}.leases WHERE run_id = %s AND lease = %s",
                    (run_id, lease),
                )
                before, spent, reserved = cur.fetchone() or (None, 0.0, 0.0)
                return DayState(today.isoformat(), spent, reserved, self._tripped(cur, today)), before
            self._reap(cur)
            self._settle(cur, settle)
            cur.execute(f"DELETE FROM {SCHEMA}.holdings WHERE run_id = %s RETURNING day, usd", (run_id,))
            for day, usd in cur.fetchall():
                cur.execute(
                    f"UPDATE {SCHEMA}.days SET reserved_usd = reserved_usd - %s WHERE day = %s", (usd, day)
                )
            self._ensure_day(cur, today)
            cur.execute(
                f"UPDATE {SCHEMA}.days "
                "SET last_grant = least(%(want)s, %(limit)s - spent_usd - reserved_usd), "
                "reserved_usd = reserved_usd + least(%(want)s, %(limit)s - spent_usd - reserved_usd) "
                "WHERE day = %(day)s AND %(limit)s - spent_usd - reserved_usd >= %(need)s "
                "RETURNING last_grant, spent_usd, reserved_usd - last_grant",
                {"want": want, "limit": limit, "need": need, "day": today},
            )
            row = cur.fetchone()
            granted: float | None
            if row is not None:
                granted, spent, others = (float(value) for value in row)
                held = granted
            else:
                granted, held = None, floor
                # The breaker trips at this limit, unless it tripped at a higher one already.
                cur.execute(
                    f"UPDATE {SCHEMA}.days SET reserved_usd = reserved_usd + %(floor)s, "
                    "tripped_run = CASE WHEN coalesce(tripped_limit < %(limit)s, true) THEN %(run)s "
                    "ELSE tripped_run END, "
                    "tripped_at = CASE WHEN coalesce(tripped_limit < %(limit)s, true) THEN now() "
                    "ELSE tripped_at END, "
                    "tripped_limit = greatest(tripped_limit, %(limit)s) "
                    "WHERE day = %(day)s RETURNING spent_usd, reserved_usd - %(floor)s",
                    {"limit": limit, "run": run_id, "floor": floor, "day": today},
                )
                spent, others = cur.fetchone() or (0.0, 0.0)
            if held > 0:
                cur.execute(
                    f"INSERT INTO {SCHEMA}.holdings (run_id, day, usd, backend, backend_start, host, pid) "
                    "SELECT %s, %s, %s, pg_backend_pid(), "
                    "(SELECT backend_start FROM pg_catalog.pg_stat_activity WHERE pid = pg_backend_pid()), "
                    "%s, %s",
                    (run_id, today, held, socket.gethostname(), os.getpid()),
                )
            cur.execute(
                f"UPDATE {SCHEMA}.leases SET granted = %s, spent = %s, reserved = %s "
                "WHERE run_id = %s AND lease = %s",
                (granted, spent, others, run_id, lease),
            )
            return DayState(
                today.isoformat(), float(spent), float(others), self._tripped(cur, today)
            ), granted

        return self._transaction("hold a lease in", run)

    def finish(self, run_id: str, settle: list[tuple[str, float]]) -> None:
        """Add the run's last settled spending, drop whatever it still holds, and disconnect."""
        self.hold(run_id, settle, 0.0, 0.0, 0.0, float("inf"))

        def prune(cur: psycopg.Cursor[Any]) -> None:
            oldest = self._today() - dt.timedelta(days=KEEP_DAYS)
            cur.execute(f"DELETE FROM {SCHEMA}.leases WHERE day < %s", (oldest,))
            cur.execute(f"DELETE FROM {SCHEMA}.days WHERE day < %s", (oldest,))

        self._transaction("prune", prune)
        self.close()

    def state(self) -> DayState:
        def run(cur: psycopg.Cursor[Any]) -> DayState:
            self._reap(cur)
            return self._state(cur, self._today())

        return self._transaction("read", run)

    @property
    def _conn(self) -> psycopg.Connection[Any] | None:
        return None if self._session is None else self._session.conn

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    # -- the database ---------------------------------------------------------------------------

    def _transaction(self, doing: str, body: Callable[[psycopg.Cursor[Any]], T]) -> T:
        """Run `body` in one transaction; a lost connection is reconnected and the transaction
        retried once (with the same lease number, so it counts once); then it is an error. A timeout
        is an error at once: waiting twice as long would not make the server answer."""
        driver = pg.load_driver(self.url, LedgerError)
        for retry in (False, True):
            session = self._connection(doing)
            try:
                with session.answering(), session.conn.transaction(), session.conn.cursor() as cur:
                    return body(cur)
            except driver.Error as exc:
                self._fail(doing, exc, session, final=retry)
        raise AssertionError("unreachable")

    def _fail(self, doing: str, exc: Exception, session: pg.Session, *, final: bool) -> None:
        """Raise the LedgerError for `exc`; return when a lost connection may be retried."""
        driver = pg.load_driver(self.url, LedgerError)
        problem = pg.timed_out(exc, self.url.timeouts, stalled=session.watchdog.fired)
        if problem is not None:
            self.close()
            session.close()
            raise LedgerError(
                f"{self.url}: the day ledger database timed out while trying to {doing} it: {problem}; "
                "a run under max_daily_cost_usd does not start, or stops, rather than spend uncounted "
                f"(fail closed); {pg.TIMEOUT_FIX}"
            ) from None
        if isinstance(exc, driver.OperationalError):
            self.close()
            session.close()
            if not final:
                return
            problem = pg.scrub(str(exc), self.url)
            raise LedgerError(
                f"{self.url}: lost the day ledger database while trying to {doing} it "
                f"({problem}); a run under max_daily_cost_usd stops rather than spend uncounted; "
                + pg.connection_fix(problem)
            ) from None
        raise LedgerError(
            f"{self.url}: cannot {doing} the day ledger ({pg.scrub(str(exc), self.url)}); "
            "check the server's log"
        ) from None

    def _connection(self, doing: str) -> pg.Session:
        if self._session is None:
            session = pg.connect(self.url, LedgerError, what="day ledger")
            driver = pg.load_driver(self.url, LedgerError)
            try:
                with session.answering():
                    self._prepare(session.conn)
            except driver.Error as exc:
                self._fail(doing, exc, session, final=True)
                raise AssertionError("unreachable: a final failure raises") from None
            except BaseException:
                session.close()
                raise
            self._session = session
        return self._session

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        version = self._checked(conn)
        if version == SCHEMA_VERSION:
            return
        with conn.transaction():
            conn.execute("SELECT pg_catalog.pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            version = self._checked(conn)
            for step in range(version or 0, SCHEMA_VERSION):
                conn.execute(MIGRATIONS[step])
            conn.execute(
                f"INSERT INTO {SCHEMA}.meta (key, value) VALUES ('schema_version', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (str(SCHEMA_VERSION),),
            )

    def _checked(self, conn: psycopg.Connection[Any]) -> int | None:
        """The schema's version, once the schema is found to be ours (`pg.inspect`)."""
        elsewhere = "point [tool.agentevals] ledger / $AGENTEVALS_LEDGER at another database"
        fix = (
            f"nothing was written; {elsewhere}, or drop the schema {SCHEMA} by hand once you know "
            "what was spent today"
        )
        version, found = pg.inspect(conn, SCHEMA, EXPECTED, newest=SCHEMA_VERSION)
        if version is not None and version > SCHEMA_VERSION:
            raise LedgerError(
                f"{self.url}: this day ledger was written by a newer pytest-agentevals (schema {version}, "
                f"this one reads {SCHEMA_VERSION}); nothing was written; upgrade pytest-agentevals, or "
                f"{elsewhere}"
            )
        if version == -1:
            raise LedgerError(f"{self.url}: the schema {SCHEMA} is not an agentevals day ledger's; {fix}")
        if found:
            more = f" and {len(found) - 5} more" if len(found) > 5 else ""
            raise LedgerError(
                f"{self.url}: is not an agentevals day ledger as it stands: the schema {SCHEMA} holds "
                f"{'; '.join(found[:5])}{more}; an object of its own (a trigger, rule, policy, view, "
                "function, or a default, constraint or index calling one) could run code or change what "
                "was spent, so the run is refused (fail closed); remove what is named (each with the "
                f"statement beside it), or {fix}"
            )
        return version

    @staticmethod
    def _ensure_day(cur: psycopg.Cursor[Any], day: dt.date) -> None:
        cur.execute(f"INSERT INTO {SCHEMA}.days (day) VALUES (%s) ON CONFLICT DO NOTHING", (day,))

    @staticmethod
    def _settle(cur: psycopg.Cursor[Any], settle: list[tuple[str, float]]) -> None:
        per_day: dict[str, list[float]] = defaultdict(list)
        for day, usd in settle:
            per_day[day].append(usd)
        for day, amounts in sorted(per_day.items()):  # one order for every run: no deadlock
            cur.execute(
                f"INSERT INTO {SCHEMA}.days (day, spent_usd, calls) VALUES (%s, %s, %s) "
                f"ON CONFLICT (day) DO UPDATE SET spent_usd = {SCHEMA}.days.spent_usd + EXCLUDED.spent_usd, "
                f"calls = {SCHEMA}.days.calls + EXCLUDED.calls",
                (dt.date.fromisoformat(day), sum(amounts), len(amounts)),
            )

    @staticmethod
    def _reap(cur: psycopg.Cursor[Any]) -> None:
        """Holdings whose server backend is gone become spending on their day (never less)."""
        cur.execute(
            f"DELETE FROM {SCHEMA}.holdings h WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a "
            "WHERE a.pid = h.backend AND (a.backend_start IS NULL OR h.backend_start IS NULL "
            "OR a.backend_start = h.backend_start)) RETURNING day, usd"
        )
        for day, usd in sorted(cur.fetchall()):
            cur.execute(
                f"UPDATE {SCHEMA}.days SET spent_usd = spent_usd + %s, reserved_usd = reserved_usd - %s, "
                "reaped_usd = reaped_usd + %s WHERE day = %s",
                (usd, usd, usd, day),
            )

    @staticmethod
    def _tripped(cur: psycopg.Cursor[Any], day: dt.date) -> dict[str, Any] | None:
        cur.execute(
            f"SELECT tripped_limit, tripped_run, tripped_at FROM {SCHEMA}.days WHERE day = %s", (day,)
        )
        row = cur.fetchone()
        if row is None or row[0] is None:
            return None
        return {"limit_usd": float(row[0]), "run_id": row[1], "at": row[2].isoformat(timespec="seconds")}

    def _state(self, cur: psycopg.Cursor[Any], day: dt.date) -> DayState:
        cur.execute(f"SELECT spent_usd, reserved_usd FROM {SCHEMA}.days WHERE day = %s", (day,))
        row = cur.fetchone() or (0.0, 0.0)
        return DayState(day.isoformat(), float(row[0]), max(0.0, float(row[1])), self._tripped(cur, day))
