"""What the PostgreSQL history and day ledger share: connecting, the server check, our schema's guard.

- psycopg is imported here, lazily, and only when a postgresql:// URL is used: a user who sets no
  URL never needs it, and plugin load never imports it.
- Every failure becomes one error (the caller's class) naming the server by its redacted URL and
  saying how to fix it; the password is also scrubbed from the driver's own text.
- Each store keeps its tables in a schema of its own (`agentevals_history`, `agentevals_ledger`).
  Before anything is written, the schema is compared with what we create: any other relation (a
  view, a foreign table, a table of its own), a trigger, a rule, a row-level policy or a function
  in it is refused by name. A trigger could rewrite failures as passes or hang every session; a
  policy could hide rows from a verdict.
- Every connection runs with `search_path = pg_catalog, pg_temp` and every name is qualified, so
  an object elsewhere in the database can never stand in for ours.
- Every connection runs under the URL's `DbTimeouts`: libpq's connect timeout, and the server's lock,
  statement and idle-in-transaction timeouts. A server that stops answering altogether (a stalled
  backend never sees a cancel, nor a statement timeout) is given up by a `Watchdog` on the client.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from .errors import AgentEvalsError
from .settings.dburl import DatabaseURL, DbTimeouts, secrets_of

if TYPE_CHECKING:
    import psycopg

MIN_SERVER_VERSION = 120000  # PostgreSQL 12: the oldest release still supported when this was written
# How long past the server's statement timeout the client waits for an answer: the server's own cancel
# (which keeps the connection usable) comes first whenever the server is alive to send it.
GRACE = 1.0
TIMEOUTS_KEY = "[tool.agentevals.db_timeouts]"
INSTALL = "pip install 'pytest-agentevals[postgresql]'"

ErrorClass = Callable[[str], AgentEvalsError]


def load_driver(url: DatabaseURL, error: ErrorClass) -> Any:
    try:
        import psycopg
    except ImportError:
        raise error(f"{url}: a PostgreSQL URL needs the psycopg driver; {INSTALL}") from None
    return psycopg


def scrub(text: str, url: DatabaseURL) -> str:
    """The driver's message without the URL's password, should it quote it (as written or decoded)."""
    text = text.strip().replace(url.url, str(url))
    for secret in secrets_of(url.url):
        text = text.replace(secret, "***")
    return " ".join(text.split())


def connection_fix(problem: str) -> str:
    """What to do about a failed connection, from the driver's message."""
    lowered = problem.lower()
    if "password" in lowered or "authentication" in lowered:
        return "check the user and password in the URL (the CI secret that holds it)"
    if "does not exist" in lowered:
        return "create the database (createdb NAME) or fix its name in the URL"
    if "refused" in lowered or "timeout" in lowered or "could not" in lowered or "no route" in lowered:
        return "start the server, or fix the host and port in the URL"
    return "fix the URL (docs/history.md, 'URL forms')"


class Watchdog:
    """Gives up on a server that stopped answering. While armed, one thread waits for the deadline;
    past it, the connection's socket is shut down, which wakes the driver's wait with an error (a
    stalled backend handles no cancel request and no statement timeout). It shuts down its own
    duplicate of the socket, so a descriptor the driver closed and the process reused is never hit."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._sock = socket.socket(fileno=os.dup(conn.fileno()))
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._closed = False
        self.fired = False
        self._thread = threading.Thread(target=self._watch, name="agentevals-pg-watchdog", daemon=True)
        self._thread.start()

    @contextlib.contextmanager
    def armed(self, seconds: float) -> Iterator[None]:
        with self._cond:
            self._deadline, self.fired = time.monotonic() + seconds, False
            self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                self._deadline = None
                self._cond.notify()

    def _watch(self) -> None:
        with self._cond:
            while not self._closed:
                left = None if self._deadline is None else self._deadline - time.monotonic()
                if left is None or left > 0:
                    self._cond.wait(left)
                    continue
                self._deadline, self.fired = None, True
                with contextlib.suppress(OSError):  # already gone: the driver sees that itself
                    self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._sock.close()


class Session:
    """A connection to our database and the watchdog over it; `run` is how every use of it goes."""

    def __init__(self, conn: psycopg.Connection[Any], timeouts: DbTimeouts) -> None:
        self.conn = conn
        self.timeouts = timeouts
        self.watchdog = Watchdog(conn)

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """A block of statements the server must answer, each within the statement timeout."""
        with self.watchdog.armed(self.timeouts.statement + GRACE):
            yield

    def close(self) -> None:
        self.conn.close()
        self.watchdog.close()


def timed_out(exc: BaseException, timeouts: DbTimeouts, *, stalled: bool = False) -> str | None:
    """What ran out of time, naming the timeout (and the setting), when `exc` is a timeout; else None.
    `stalled`: the watchdog gave up on the server."""
    if stalled:
        return (
            f"the server stopped answering: nothing came back within {timeouts.statement + GRACE:g} s "
            f"(statement = {timeouts.statement:g} s in {TIMEOUTS_KEY}, and {GRACE:g} s of grace)"
        )
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate == "55P03":
        return (
            f"waited {timeouts.lock:g} s for a lock another session holds "
            f"(lock = {timeouts.lock:g} s in {TIMEOUTS_KEY})"
        )
    if sqlstate == "57014" and "statement timeout" in str(exc):
        return (
            f"a statement ran past the statement timeout of {timeouts.statement:g} s "
            f"(statement = {timeouts.statement:g} s in {TIMEOUTS_KEY})"
        )
    if sqlstate == "25P03":
        return (
            f"a transaction sat idle past {timeouts.idle_in_transaction:g} s "
            f"(idle_in_transaction in {TIMEOUTS_KEY})"
        )
    return None


TIMEOUT_FIX = (
    "check that the server is up and answering (pg_stat_activity shows who holds a lock), or raise "
    f"the timeout in {TIMEOUTS_KEY}"
)


def connect(url: DatabaseURL, error: ErrorClass, *, what: str) -> Session:
    """An autocommit connection to the server at `url`, checked to be a version we support, its
    search path pinned and its timeouts set."""
    driver = load_driver(url, error)
    ambiguous = url.ambiguous()
    if ambiguous is not None:  # libpq would cut the password elsewhere, and quote a piece of it
        raise error(f"{url}: {ambiguous}; nothing was written; percent-encode it in the URL")
    timeouts = url.timeouts
    options: dict[str, Any] = {"autocommit": True, "application_name": "agentevals"}
    given = _url_connect_timeout(url)
    if given is None:
        options["connect_timeout"] = timeouts.connect
    try:
        conn: psycopg.Connection[Any] = driver.connect(url.url, **options)
    except driver.Error as exc:
        if "timeout expired" in str(exc):  # ConnectionTimeout (psycopg 3.2+), or libpq's own words
            waited = given or f"{timeouts.connect} s (connect in {TIMEOUTS_KEY})"
            raise error(
                f"{url}: the {what} database did not complete the connection within {waited}; nothing "
                f"was written; {TIMEOUT_FIX}"
            ) from None
        problem = scrub(str(exc), url)
        raise error(
            f"{url}: cannot connect to the {what} database ({problem}); nothing was written; "
            + connection_fix(problem)
        ) from None
    except Exception as exc:  # a URL libpq cannot parse: ProgrammingError, ValueError...
        raise error(
            f"{url}: is not a usable PostgreSQL URL ({scrub(str(exc), url)}); nothing was written; "
            "fix the URL (docs/history.md, 'URL forms')"
        ) from None
    session = Session(conn, timeouts)
    try:
        settings = {"search_path": "pg_catalog, pg_temp", **timeouts.server_settings()}
        calls = ", ".join("pg_catalog.set_config(%s, %s, false)" for _ in settings)
        try:
            with session.answering():
                conn.execute(f"SELECT {calls}", [item for pair in settings.items() for item in pair])
        except driver.Error as exc:
            late = timed_out(exc, timeouts, stalled=session.watchdog.fired)
            if late is None:
                raise error(
                    f"{url}: cannot set up the connection to the {what} database ({scrub(str(exc), url)}); "
                    "nothing was written; check the server's log"
                ) from None
            raise error(
                f"{url}: the {what} database timed out: {late}; nothing was written; {TIMEOUT_FIX}"
            ) from None
        version = conn.info.server_version
        if version < MIN_SERVER_VERSION:
            raise error(
                f"{url}: the server runs PostgreSQL {_release(version)}, and the {what} needs "
                f"{_release(MIN_SERVER_VERSION)} or newer; nothing was written; upgrade the server, or "
                "point the setting at another one"
            )
    except BaseException:
        session.close()
        raise
    return session


def _url_connect_timeout(url: DatabaseURL) -> str | None:
    """The connect timeout the URL sets itself (`?connect_timeout=5`), as said in a message."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        value = conninfo_to_dict(url.url).get("connect_timeout")
    except Exception:  # the driver names what is wrong with the URL when it connects
        return None
    return None if value is None else f"{value} s (connect_timeout in the URL)"


def _release(version: int) -> str:
    return f"{version // 10000}" if version >= 100000 else f"{version // 10000}.{version // 100 % 100}"


def foreign_objects(
    conn: psycopg.Connection[Any], schema: str, tables: Iterable[str], relations: Iterable[str]
) -> list[str]:
    """What our `schema` holds beyond `relations` (our tables, their indexes and sequences): each as
    'a KIND NAME', in a stable order. Reading the catalog runs nothing."""
    kinds = {
        "r": "table",
        "p": "partitioned table",
        "v": "view",
        "m": "materialized view",
        "f": "foreign table",
        "i": "index",
        "I": "index",
        "S": "sequence",
        "c": "type",
    }
    found: list[str] = []
    ours = set(relations)
    for name, kind in conn.execute(
        "SELECT c.relname, c.relkind::text FROM pg_catalog.pg_class c "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s ORDER BY c.relname",
        (schema,),
    ):
        if name not in ours:
            found.append(f"a {kinds.get(kind, 'relation')} {name!r}")
    table_names = list(tables)
    for (name,) in conn.execute(
        "SELECT t.tgname FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND NOT t.tgisinternal ORDER BY t.tgname",
        (schema,),
    ):
        found.append(f"a trigger {name!r}")
    for (name,) in conn.execute(
        "SELECT r.rulename FROM pg_catalog.pg_rewrite r JOIN pg_catalog.pg_class c ON c.oid = r.ev_class "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = ANY(%s) ORDER BY r.rulename",
        (schema, table_names),
    ):
        found.append(f"a rule {name!r}")
    for (name,) in conn.execute(
        "SELECT p.polname FROM pg_catalog.pg_policy p JOIN pg_catalog.pg_class c ON c.oid = p.polrelid "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s ORDER BY p.polname",
        (schema,),
    ):
        found.append(f"a row-level policy {name!r}")
    for (name,) in conn.execute(
        "SELECT p.proname FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = %s ORDER BY p.proname",
        (schema,),
    ):
        found.append(f"a function {name!r}")
    return found


def schema_version(conn: psycopg.Connection[Any], schema: str, table: str = "meta") -> int | None:
    """The version our `table` (a key/value table in our schema) records; None when the schema or the
    table is missing; -1 when the table is there and says nothing we wrote."""
    # A plain catalog query, not to_regclass(): that reads the backend's catalog cache, which waiting
    # on an advisory lock does not refresh, so it would miss a schema another job just committed.
    row = conn.execute(
        "SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s AND c.relkind = 'r'",
        (schema, table),
    ).fetchone()
    if row is None:
        return None
    found = conn.execute(f"SELECT value FROM {schema}.{table} WHERE key = 'schema_version'").fetchone()
    try:
        return int(found[0]) if found else -1
    except (TypeError, ValueError):
        return -1
