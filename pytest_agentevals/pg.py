"""What the PostgreSQL history and day ledger share: connecting, the server check, our schema's guard.

- psycopg is imported here, lazily, and only when a postgresql:// URL is used: a user who sets no
  URL never needs it, and plugin load never imports it.
- Every failure becomes one error (the caller's class) naming the server by its redacted URL and
  saying how to fix it; the password is also scrubbed from the driver's own text.
- Each store keeps its tables in a schema of its own (`agentevals_history`, `agentevals_ledger`).
  Before anything is read from its tables or written, the schema's catalog is compared with what the
  migrations make (`describe`, `inspect`): any object more, less or different — a relation, column,
  DEFAULT, constraint, index, trigger, rule, policy, function, type, inheritance — is refused by
  name. A trigger or a DEFAULT calling a function could rewrite failures as passes, reset the day's
  spending or hang every session; a policy could hide rows from a verdict.
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
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


# -- our schema, as the catalog describes it ---------------------------------------------------------
#
# `describe` reads the catalog (which runs nothing) into one entry per object of our schema: its key
# ("column attempts.outcome"), its definition as the server deparses it (under our pinned search
# path, so a function outside pg_catalog is shown qualified: `public.whitewash()`), and the statement
# that would remove it. A store compares that with its EXPECTED entries (what its migrations create):
# anything more, less or different is refused by name before anything is read or written.

_COLUMNS = """
SELECT c.relname, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod)
    || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
    || CASE a.attidentity WHEN 'a' THEN ' GENERATED ALWAYS AS IDENTITY'
                          WHEN 'd' THEN ' GENERATED BY DEFAULT AS IDENTITY' ELSE '' END
    || CASE WHEN a.attgenerated <> '' THEN ' GENERATED ALWAYS AS ' ELSE '' END
    || coalesce(CASE WHEN a.attgenerated = '' THEN ' DEFAULT ' ELSE '' END
                || pg_catalog.pg_get_expr(d.adbin, d.adrelid), '')
    || CASE WHEN a.attcollation <> t.typcollation
            THEN ' COLLATE ' || pg_catalog.quote_ident(co.collname) ELSE '' END
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
LEFT JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation
WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p', 'f', 'v', 'm')
AND a.attnum > 0 AND NOT a.attisdropped
"""
_RELATIONS = """
SELECT c.relname, c.relkind::text, c.relrowsecurity, c.relforcerowsecurity
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s
"""
# NOT NULL constraints (contype 'n', PostgreSQL 18) are the columns' NOT NULL, described there.
_CONSTRAINTS = """
SELECT c.relname, con.conname, pg_catalog.pg_get_constraintdef(con.oid)
FROM pg_catalog.pg_constraint con
JOIN pg_catalog.pg_class c ON c.oid = con.conrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND con.contype <> 'n'
"""
_INDEXES = """
SELECT ci.relname, pg_catalog.pg_get_indexdef(i.indexrelid)
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_class ci ON ci.oid = i.indexrelid
JOIN pg_catalog.pg_namespace n ON n.oid = ci.relnamespace
WHERE n.nspname = %(schema)s
"""
_TRIGGERS = """
SELECT c.relname, t.tgname, pg_catalog.pg_get_triggerdef(t.oid)
FROM pg_catalog.pg_trigger t
JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND NOT t.tgisinternal
"""
_RULES = """
SELECT c.relname, r.rulename, pg_catalog.pg_get_ruledef(r.oid)
FROM pg_catalog.pg_rewrite r
JOIN pg_catalog.pg_class c ON c.oid = r.ev_class
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s
"""
_POLICIES = """
SELECT c.relname, p.polname, p.polcmd::text
    || ' USING ' || coalesce(pg_catalog.pg_get_expr(p.polqual, p.polrelid), '')
    || ' WITH CHECK ' || coalesce(pg_catalog.pg_get_expr(p.polwithcheck, p.polrelid), '')
FROM pg_catalog.pg_policy p
JOIN pg_catalog.pg_class c ON c.oid = p.polrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s
"""
# Functions (and procedures, aggregates) and operators in our schema, and those that any object of it
# depends on outside pg_catalog: the code a default, a constraint, an index or a type would run.
_FUNCTIONS = """
SELECT p.oid::pg_catalog.regprocedure::text
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = %(schema)s
UNION
SELECT o.oid::pg_catalog.regoperator::text
FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
WHERE n.nspname = %(schema)s
"""
_CALLED = """
SELECT DISTINCT p.oid::pg_catalog.regprocedure::text
FROM pg_catalog.pg_depend d
JOIN pg_catalog.pg_proc p ON d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.oid = d.refobjid
JOIN pg_catalog.pg_namespace pn ON pn.oid = p.pronamespace
WHERE pn.nspname <> 'pg_catalog' AND (
    (d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND d.objid IN (
        SELECT ad.oid FROM pg_catalog.pg_attrdef ad JOIN pg_catalog.pg_class c ON c.oid = ad.adrelid
        JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(schema)s))
    OR (d.classid = 'pg_catalog.pg_constraint'::pg_catalog.regclass AND d.objid IN (
        SELECT con.oid FROM pg_catalog.pg_constraint con JOIN pg_catalog.pg_class c ON c.oid = con.conrelid
        JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(schema)s))
    OR (d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid IN (
        SELECT c.oid FROM pg_catalog.pg_class c
        JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(schema)s))
)
"""
_TYPES = """
SELECT t.typname, t.typtype::text
FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE n.nspname = %(schema)s AND t.typrelid = 0
AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_type e WHERE e.oid = t.typelem AND e.typrelid <> 0)
"""
_INHERITS = """
SELECT child.oid::pg_catalog.regclass::text, parent.oid::pg_catalog.regclass::text
FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_class child ON child.oid = i.inhrelid
JOIN pg_catalog.pg_class parent ON parent.oid = i.inhparent
WHERE child.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = %(schema)s)
   OR parent.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = %(schema)s)
"""
_KINDS = {
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
_DROP = {"partitioned table": "TABLE", "index": "INDEX", "type": "TYPE"}


@dataclass(frozen=True)
class Entry:
    """One object of our schema: what it is ("a column 'attempts.outcome'"), its definition, and the
    statement that would remove it."""

    what: str
    definition: str
    drop: str


def describe(conn: psycopg.Connection[Any], schema: str) -> dict[str, Entry]:
    """Every object in `schema` (and what reaches into it: inheritance, functions its objects call),
    keyed "kind name". Reading the catalog runs nothing."""
    found: dict[str, Entry] = {}
    params = {"schema": schema}

    def rows(sql: str) -> list[Any]:
        return list(conn.execute(sql, params))

    for name, kind, rls, forced in rows(_RELATIONS):
        word = _KINDS.get(kind, "relation")
        found[f"relation {name}"] = Entry(
            f"a {word} {name!r}", word, f"DROP {_DROP.get(word, word.upper())} {schema}.{name}"
        )
        if rls or forced:
            found[f"row-level security {name}"] = Entry(
                f"row-level security on {name!r}",
                "forced" if forced else "enabled",
                f"ALTER TABLE {schema}.{name} NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY",
            )
    for table, column, definition in rows(_COLUMNS):
        found[f"column {table}.{column}"] = Entry(
            f"a column '{table}.{column}'", definition, f"ALTER TABLE {schema}.{table} DROP COLUMN {column}"
        )
    for table, name, definition in rows(_CONSTRAINTS):
        found[f"constraint {table}.{name}"] = Entry(
            f"a constraint {name!r} on {table}",
            definition,
            f"ALTER TABLE {schema}.{table} DROP CONSTRAINT {name}",
        )
    for name, definition in rows(_INDEXES):
        found[f"index {name}"] = Entry(f"an index {name!r}", definition, f"DROP INDEX {schema}.{name}")
    for table, name, definition in rows(_TRIGGERS):
        found[f"trigger {table}.{name}"] = Entry(
            f"a trigger {name!r} on {table}", definition, f"DROP TRIGGER {name} ON {schema}.{table}"
        )
    for table, name, definition in rows(_RULES):
        found[f"rule {table}.{name}"] = Entry(
            f"a rule {name!r} on {table}", definition, f"DROP RULE {name} ON {schema}.{table}"
        )
    for table, name, definition in rows(_POLICIES):
        found[f"policy {table}.{name}"] = Entry(
            f"a row-level policy {name!r} on {table}", definition, f"DROP POLICY {name} ON {schema}.{table}"
        )
    for (signature,) in rows(_FUNCTIONS):
        found[f"function {signature}"] = Entry(
            f"a function {signature}", "in the schema", f"DROP ROUTINE {signature}"
        )
    for (signature,) in rows(_CALLED):
        found[f"called {signature}"] = Entry(
            f"a call of {signature}", "by an object of the schema", "drop what calls it (named beside)"
        )
    for name, kind in rows(_TYPES):
        found[f"type {name}"] = Entry(f"a type {name!r}", kind, f"DROP TYPE {schema}.{name}")
    for child, parent in rows(_INHERITS):
        found[f"inherits {child}"] = Entry(
            f"a table {child} inheriting from {parent}", parent, f"ALTER TABLE {child} NO INHERIT {parent}"
        )
    return found


def differences(found: dict[str, Entry], expected: dict[str, str], *, missing: bool = True) -> list[str]:
    """What `found` holds beyond, apart from (and, with `missing`, short of) `expected` (key ->
    definition): one phrase each, naming the object, its definition and how to remove it."""
    out: list[str] = []
    for key, entry in sorted(found.items()):
        if key not in expected:
            out.append(f"{entry.what} ({entry.definition}; remove it: {entry.drop})")
        elif expected[key] != entry.definition:
            out.append(f"{entry.what} defined as {entry.definition!r} where ours is {expected[key]!r}")
    if missing:
        out.extend(
            f"no {key} (ours has {definition!r})"
            for key, definition in sorted(expected.items())
            if key not in found
        )
    return out


def inspect(
    conn: psycopg.Connection[Any],
    schema: str,
    expected: dict[str, str],
    *,
    newest: int,
    older: Mapping[int, dict[str, str]] | None = None,
) -> tuple[int | None, list[str]]:
    """Our schema's version (as `schema_version`) and what in it is not ours (`differences`), read in
    an order that runs nothing: the catalog first, the meta table only once no row-level policy could
    run code as it is read. A schema that is not there yet, or predates its meta table, may lack
    objects (the migrations make them); a newer one is left to the caller to refuse as newer. An
    older version named in `older` is compared with that version's catalog (its migrations then
    bring it up to date); any other with `expected`, the newest's."""
    found = describe(conn, schema)
    readers = {
        key: entry for key, entry in found.items() if key.startswith(("policy ", "row-level security "))
    }
    if readers:
        return None, differences(readers, expected, missing=False)
    version = schema_version(conn, schema)
    if version is not None and (version > newest or version == -1):
        return version, []
    if version is not None and older and version in older:
        expected = older[version]
    found_wrong = differences(found, expected, missing=version is not None)
    if found_wrong and version is not None:
        # Each statement sees what was committed when it began: a migration that committed between
        # the catalog read and the version's is read again, whole, now that its version is seen.
        version = schema_version(conn, schema)
        if version is not None and version > newest:
            return version, []
        if version is not None and older and version in older:
            expected = older[version]
        found_wrong = differences(describe(conn, schema), expected)
    return version, found_wrong


def snapshot(found: dict[str, Entry]) -> dict[str, str]:
    """`found` in the form of a store's EXPECTED (what a test compares a fresh schema with)."""
    return {key: entry.definition for key, entry in sorted(found.items())}


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
