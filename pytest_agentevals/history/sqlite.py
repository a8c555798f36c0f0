"""The default history store: one SQLite file, in WAL mode, written with `BEGIN IMMEDIATE`.

- WAL lets readers (a report) run while a writer appends; `BEGIN IMMEDIATE` takes the write lock at
  the start of a transaction, so two writers queue on the busy timeout instead of deadlocking halfway.
- Every write is one transaction: a batch is stored whole or not at all, and a failed write rolls
  back without touching what was stored before.
- A new history appears whole: its schema is written to a scratch file beside it, which is then
  linked into place. So no process ever opens a half-made history, and an empty file is never ours.
- A file that is not a readable history (garbage, an empty file, another program's database, a newer
  schema, a damaged page found by `PRAGMA quick_check`) raises one `HistoryError` naming the file and
  how to fix it. The file is never modified or deleted.
- The file is data, never code: before anything is read or written (before even WAL mode is set),
  every object in its schema is compared with the project's own (`sqlite_master`, name, type and SQL
  text), and a file holding anything else (a trigger, a view or table of its own, a virtual table,
  an index) is refused with one `HistoryError` naming the object. A trigger could hang every
  session or rewrite failures as passes; a rewritten view could lie to every verdict. The
  connection also runs with `PRAGMA trusted_schema = OFF` (and SQLITE_DBCONFIG_DEFENSIVE where the
  Python has `setconfig`, 3.12 on).
- A history of an older schema is migrated in place, in one write transaction, keeping every row
  (`_migrate`): schema 1 -> 2 admits the outcome `budget_stopped`, which means rebuilding the
  attempts table (SQLite cannot alter a CHECK constraint). Before that, the file is checked against
  the objects of the schema its version names, as a current one is against the current schema.
- The file, its `-wal`, `-shm` and `-journal` companions and the folders above it (up to the
  working directory) are never symbolic links (`fileio.refuse_links`): a committed link would make
  SQLite write outside the tree.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import HistoryError, LinkRefused
from ..fileio import refuse_links
from .model import (
    BUDGET_STOPPED,
    SKIPS_ONLY,
    STOPS_EXCLUDED,
    Attempt,
    Source,
    StoredAttempt,
    ignored_outcomes,
)
from .store import ExcludedSource, RunFinal, RunLayer, VerdictCount

SCHEMA_VERSION = 2
BUSY_TIMEOUT_SECONDS = 30.0

_SCHEMA = """
CREATE TABLE sources (
    id       INTEGER PRIMARY KEY,
    key      TEXT NOT NULL UNIQUE,      -- pytest:<uuid> or junit:<sha256 of the file>
    kind     TEXT NOT NULL,             -- pytest or junit
    run_id   TEXT NOT NULL,
    sha      TEXT,                      -- NULL: commit unknown, attempts kept but never judged
    branch   TEXT,
    path     TEXT,                      -- the JUnit file of a junit source
    created  REAL NOT NULL,             -- unix time the source was first stored
    excluded TEXT                       -- NULL, or why its attempts are not judged (an outage)
);
CREATE TABLE tests (
    id      INTEGER PRIMARY KEY,
    test_id TEXT NOT NULL,
    variant TEXT NOT NULL,              -- canonical JSON of seed, model and marker parameters, or ''
    layer   TEXT NOT NULL,              -- step, replay, resume, marathon, or '' outside the pyramid
    UNIQUE (test_id, variant, layer)
);
CREATE TABLE attempts (
    id       INTEGER PRIMARY KEY,       -- insertion order: the recency of an attempt
    source   INTEGER NOT NULL REFERENCES sources (id),
    test     INTEGER NOT NULL REFERENCES tests (id),
    attempt  INTEGER NOT NULL,          -- 1, then 2 for the first rerun in the same source...
    outcome  TEXT NOT NULL CHECK (outcome IN ({outcomes})),
    duration REAL NOT NULL,
    worker   TEXT
);
CREATE VIEW attempt_rows AS
    SELECT a.id, t.test_id, NULLIF(t.layer, '') AS layer, t.variant, s.sha, s.branch, s.run_id,
           a.attempt, a.outcome, a.duration, a.worker, s.key AS source, s.excluded
    FROM attempts a JOIN sources s ON s.id = a.source JOIN tests t ON t.id = a.test;
"""

# The outcomes the attempts table admits, by schema version (2 added budget_stopped).
_OUTCOMES_OF = {
    1: "'passed', 'failed', 'error', 'skipped'",
    2: "'passed', 'failed', 'error', 'skipped', 'budget_stopped'",
}


def _schema_statements(version: int = SCHEMA_VERSION) -> list[str]:
    """The statements that make the schema of `version` (each as SQLite stores its text)."""
    text = _SCHEMA.replace("{outcomes}", _OUTCOMES_OF[version])
    return [statement for statement in text.split(";") if statement.strip()]


_FIX = (
    "nothing was changed; move the file aside (e.g. `mv {path} {path}.broken`) to start a new "
    "history, or point --agentevals-history / [tool.agentevals] history at another file"
)

TestKey = tuple[str, str, str]  # test_id, variant, layer ('' outside the pyramid)

# The attempts a verdict is made of: from a source that is not excluded, on a known commit, and not
# of the two outcomes left out (the two parameters of a query using it: `ignored_outcomes`).
_JUDGED = "s.excluded IS NULL AND s.sha IS NOT NULL AND a.outcome NOT IN (?, ?)"


# SQLite's companions of a database file, written beside it: a link at one redirects a write too.
_COMPANIONS = ("", "-wal", "-shm", "-journal")

# SQLite's own objects, which hold data (ANALYZE's statistics), never code.
_SQLITE_OWN = frozenset({"sqlite_stat1", "sqlite_stat4", "sqlite_sequence"})


@functools.lru_cache(maxsize=4)
def _expected_objects(version: int = SCHEMA_VERSION) -> dict[str, tuple[str, str | None]]:
    """name -> (type, SQL) of every object the schema of `version` makes, read back from a scratch
    in-memory database so the text is exactly what SQLite stores (auto-indexes have no SQL)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        _create_schema(conn.cursor(), version)
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    finally:
        conn.close()
    return {name: (kind, sql) for kind, name, sql in rows}


def _create_schema(cur: sqlite3.Cursor, version: int = SCHEMA_VERSION) -> None:
    # One statement at a time: executescript() would commit the transaction halfway.
    for statement in _schema_statements(version):
        cur.execute(statement)
    cur.execute(f"PRAGMA user_version = {version}")


def _migrate(cur: sqlite3.Cursor, version: int) -> None:
    """Take a history of schema `version` to SCHEMA_VERSION inside the caller's write transaction,
    keeping every row (and every attempt's id: its recency)."""
    if version < 2:
        # 1 -> 2: the attempts table admits budget_stopped. SQLite cannot alter a CHECK, so the table
        # is rebuilt: the view over it dropped first (a rename would rewrite it), the old table renamed
        # aside, the new one made with the very text a new history has, the rows copied, the old
        # table and the view's old text gone, the view made again.
        cur.execute("DROP VIEW attempt_rows")
        cur.execute("ALTER TABLE attempts RENAME TO attempts_v1")
        cur.execute(_statement("CREATE TABLE attempts", 2))
        cur.execute(
            "INSERT INTO attempts (id, source, test, attempt, outcome, duration, worker) "
            "SELECT id, source, test, attempt, outcome, duration, worker FROM attempts_v1 ORDER BY id"
        )
        cur.execute("DROP TABLE attempts_v1")
        cur.execute(_statement("CREATE VIEW attempt_rows", 2))
    cur.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _statement(start: str, version: int) -> str:
    """The statement of the schema of `version` that begins with `start`."""
    return next(s for s in _schema_statements(version) if s.strip().startswith(start))


def _defend(conn: sqlite3.Connection) -> None:
    """SQLite's own defences: functions with side effects are never run from the schema
    (trusted_schema off), and, where Python offers setconfig (3.12), defensive mode forbids writes
    that could corrupt the file (writable_schema, journal_mode=OFF...)."""
    conn.execute("PRAGMA trusted_schema = OFF")
    setconfig = getattr(conn, "setconfig", None)
    defensive = getattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE", None)
    if setconfig is not None and defensive is not None:
        setconfig(defensive, True)


_ATTEMPT_COLUMNS = ("source", "test", "attempt", "outcome", "duration", "worker")


@functools.lru_cache(maxsize=64)
def _insert_attempts(rows: int) -> str:
    """The INSERT of `rows` attempts in one statement."""
    row = "(" + ", ".join("?" * len(_ATTEMPT_COLUMNS)) + ")"
    return f"INSERT INTO attempts ({', '.join(_ATTEMPT_COLUMNS)}) VALUES " + ", ".join([row] * rows)


def _layer(value: str) -> str | None:
    return value or None


class SQLiteStore:
    """A `HistoryStore` in one SQLite file. Opening it creates the file (and its folder) if missing."""

    def __init__(self, path: Path, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> None:
        self.path = Path(path)
        self._tests: dict[TestKey, int] = {}
        try:
            for suffix in _COMPANIONS:
                refuse_links(self.path.with_name(self.path.name + suffix))
        except LinkRefused as exc:
            raise HistoryError(str(exc)) from None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(
                f"{self.path}: cannot create the history folder ({exc.strerror}); make "
                f"{self.path.parent} writable, or set --agentevals-history to another path or 'off'"
            ) from None
        if not self.path.exists():
            self._guard("create", self._create)
        if self.path.is_file() and self.path.stat().st_size == 0:
            raise HistoryError(
                f"{self.path}: is an empty file, and an empty file is not a history database (a new "
                "history is created whole); " + _FIX.format(path=self.path)
            )
        self._conn = self._guard("open", lambda: self._connect(busy_timeout))
        try:
            self._guard("check", self._check_pages)
            self._guard("read", self._check_schema)
            self._guard("read", self._load_tests)
        except HistoryError:
            self._conn.close()
            raise

    # -- plumbing ---------------------------------------------------------------------------------

    @property
    def location(self) -> str:
        return str(self.path)

    def _connect(self, busy_timeout: float) -> sqlite3.Connection:
        if self.path.is_dir():
            raise sqlite3.OperationalError("it is a directory")
        conn = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None)
        try:
            _defend(conn)
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._check_objects(conn)
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:  # a refused schema too: never leave the file open
            conn.close()
            raise
        return conn

    def _check_objects(self, conn: sqlite3.Connection) -> None:
        """Refuse a file holding any object beyond our schema: it could run code on a write (a
        trigger) or a read (a view, a virtual table's module). Reading `sqlite_master` runs nothing.
        A new, empty database (no objects) passes: `_check_schema` creates ours in it."""
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            return  # a newer schema: `_check_schema` refuses it, asking for an upgrade
        # An older history is checked against its own schema's objects (then migrated); a new, empty
        # database (version 0) holds nothing, so anything in it is refused below.
        expected = _expected_objects(version if version in _OUTCOMES_OF else SCHEMA_VERSION)
        for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY rowid"):
            if name in _SQLITE_OWN and kind == "table":
                continue
            if expected.get(name) != (kind, sql):
                what = "virtual table" if kind == "table" and "VIRTUAL" in (sql or "").upper() else kind
                raise HistoryError(
                    f"{self.path}: is not an agentevals history as it stands: it holds a {what} {name!r} "
                    "beyond the history's schema; a history is data only, and an object of its own (a "
                    "trigger, view, virtual table, table or index) could run code or change outcomes, so "
                    "the file was not used; " + _FIX.format(path=self.path)
                )

    def _guard(self, doing: str, action: Any) -> Any:
        """Run `action`, turning any SQLite failure into one HistoryError naming the file."""
        try:
            return action()
        except sqlite3.Error as exc:
            problem = str(exc)
            if isinstance(exc, sqlite3.OperationalError) and "locked" in problem:
                raise HistoryError(
                    f"{self.path}: the history database stayed locked for {BUSY_TIMEOUT_SECONDS:.0f}s "
                    f"while trying to {doing} it; another process holds a write transaction, wait for it "
                    "or point --agentevals-history elsewhere"
                ) from None
            raise HistoryError(
                f"{self.path}: cannot {doing} the history database ({problem}); "
                + _FIX.format(path=self.path)
            ) from None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Cursor]:
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    def _create(self) -> None:
        """Write a new history's schema to a scratch file and link it into place."""
        import secrets  # only a new history needs it (it loads hmac): not every session's open

        scratch = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}.new")
        try:
            conn = sqlite3.connect(scratch, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                _create_schema(conn.cursor())
                conn.execute("COMMIT")
            finally:
                conn.close()
            try:
                os.link(scratch, self.path)
            except FileExistsError:
                pass  # another process created it meanwhile: theirs is as good
            except OSError:
                # A file system without hard links: a rename, which a creator racing us could undo.
                if not self.path.exists():
                    os.replace(scratch, self.path)
        except OSError as exc:
            raise sqlite3.OperationalError(exc.strerror or str(exc)) from None
        finally:
            scratch.unlink(missing_ok=True)

    def _check_pages(self) -> None:
        """`PRAGMA quick_check`: a damaged page is found on open, not in a query that happens to
        read it (or, worse, one that does not and reports on half the history)."""
        problems = [row[0] for row in self._conn.execute("PRAGMA quick_check(5)")]
        if problems != ["ok"]:
            raise HistoryError(
                f"{self.path}: the history database is damaged ({'; '.join(problems)}); nothing was "
                f"changed; recover what it holds with `sqlite3 {self.path} .recover | sqlite3 "
                f"{self.path}.recovered` and point --agentevals-history at that, or move it aside "
                f"(`mv {self.path} {self.path}.broken`) to start a new history"
            )

    def _check_schema(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise HistoryError(
                f"{self.path}: this history was written by a newer pytest-agentevals (schema "
                f"{version}, this one reads {SCHEMA_VERSION}); upgrade pytest-agentevals, or point "
                "--agentevals-history at another file"
            )
        with self._write() as cur:
            # Another process may have created the schema while we waited for the lock.
            version = cur.execute("PRAGMA user_version").fetchone()[0]
            if version == SCHEMA_VERSION:
                return
            if version in _OUTCOMES_OF:  # an older history of ours (its objects checked on open)
                _migrate(cur, version)
                return
            tables = cur.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if tables:
                raise HistoryError(
                    f"{self.path}: is an SQLite database but not an agentevals history (it has "
                    "tables of its own); " + _FIX.format(path=self.path)
                )
            _create_schema(cur)

    def _load_tests(self) -> None:
        rows = self._conn.execute("SELECT id, test_id, variant, layer FROM tests")
        self._tests = {(test_id, variant, layer): key for key, test_id, variant, layer in rows}

    def _new_test(self, cur: sqlite3.Cursor, key: TestKey, new: dict[TestKey, int]) -> int:
        found = new.get(key)
        if found is not None:
            return found
        cur.execute("INSERT OR IGNORE INTO tests (test_id, variant, layer) VALUES (?, ?, ?)", key)
        row = cur.execute(
            "SELECT id FROM tests WHERE test_id = ? AND variant = ? AND layer = ?", key
        ).fetchone()
        new[key] = int(row[0])
        return new[key]

    def _source_id(self, cur: sqlite3.Cursor, source: Source) -> int | None:
        row = cur.execute("SELECT id FROM sources WHERE key = ?", (source.key,)).fetchone()
        return None if row is None else int(row[0])

    def _insert(
        self, cur: sqlite3.Cursor, source: Source, attempts: Sequence[Attempt], new: dict[TestKey, int]
    ) -> int:
        """Insert the source if it is new, and the attempts; returns how many attempts."""
        source_id = self._source_id(cur, source)
        if source_id is None:
            cur.execute(
                "INSERT INTO sources (key, kind, run_id, sha, branch, path, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (source.key, source.kind, source.run_id, source.sha, source.branch, source.path, time.time()),
            )
            source_id = int(cur.lastrowid or 0)
        known = self._tests
        values: list[Any] = []
        for test_id, layer, variant, number, outcome, duration, worker in attempts:
            key = (test_id, variant, layer or "")
            test = known.get(key) or self._new_test(cur, key, new)
            values += (source_id, test, number, outcome, duration, worker)
        # Many rows per INSERT statement: a third of executemany's time for a JUnit file's 200 rows
        # (one statement stepped once instead of once per row), within SQLite's limit on parameters.
        per_row = len(_ATTEMPT_COLUMNS)
        chunk = max(1, self._conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // per_row) * per_row
        for start in range(0, len(values), chunk):
            part = values[start : start + chunk]
            cur.execute(_insert_attempts(len(part) // per_row), part)
        return len(values) // per_row

    def _run_write(self, write: Any) -> Any:
        """Run `write(cursor, new_tests)` in one transaction; remember new test ids once committed."""
        new: dict[TestKey, int] = {}

        def action() -> Any:
            with self._write() as cur:
                return write(cur, new)

        result = self._guard("write to", action)
        self._tests.update(new)  # only now that the transaction committed are these ids real
        return result

    # -- writes -----------------------------------------------------------------------------------

    def append(self, source: Source, attempts: Sequence[Attempt]) -> int:
        result: int = self._run_write(lambda cur, new: self._insert(cur, source, attempts, new))
        return result

    def ingest(self, source: Source, attempts: Sequence[Attempt]) -> bool:
        def write(cur: sqlite3.Cursor, new: dict[TestKey, int]) -> bool:
            if self._source_id(cur, source) is not None:
                return False
            self._insert(cur, source, attempts, new)
            return True

        result: bool = self._run_write(write)
        return result

    def exclude(self, key: str, reason: str) -> None:
        self._run_write(
            lambda cur, _new: cur.execute("UPDATE sources SET excluded = ? WHERE key = ?", (reason, key))
        )

    # -- reads ------------------------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        rows: list[Any] = self._guard("read", lambda: self._conn.execute(sql, params).fetchall())
        return rows

    def _tests_by_id(self) -> dict[int, TestKey]:
        return {
            key: (t, v, layer)
            for key, t, v, layer in self._query("SELECT id, test_id, variant, layer FROM tests")
        }

    def has_source(self, key: str) -> bool:
        return bool(self._query("SELECT 1 FROM sources WHERE key = ?", (key,)))

    def known_tests(self) -> dict[str, str | None]:
        rows = self._query("SELECT test_id, layer FROM tests ORDER BY id")
        return {test_id: _layer(layer) for test_id, layer in rows}

    def verdict_counts(self, per_layer: int | None = None) -> list[VerdictCount]:
        tests = self._tests_by_id()
        grouped = (
            "SELECT a.test AS test, s.sha AS sha, sum(a.outcome = 'passed') AS passes, "
            "sum(a.outcome NOT IN ('passed', ?)) AS failures, sum(a.outcome = ?) AS stopped, "
            "max(a.id) AS last, "
            "row_number() OVER (PARTITION BY t.layer ORDER BY max(a.id) DESC) AS recency "
            "FROM attempts a JOIN sources s ON s.id = a.source JOIN tests t ON t.id = a.test "
            f"WHERE {_JUDGED} GROUP BY a.test, s.sha"
        )
        rows = self._query(
            f"SELECT test, sha, passes, failures, stopped, last FROM ({grouped}) "
            "WHERE ? IS NULL OR recency <= ? ORDER BY last DESC",
            (BUDGET_STOPPED, BUDGET_STOPPED, *SKIPS_ONLY, per_layer, per_layer),
        )
        out = []
        for test, sha, passes, failures, stopped, last in rows:
            test_id, variant, layer = tests[test]
            out.append(VerdictCount(test_id, variant, _layer(layer), sha, passes, failures, last, stopped))
        return out

    def flaky_keys(self, budget_stops: str = STOPS_EXCLUDED) -> set[tuple[str, str, str]]:
        tests = self._tests_by_id()
        rows = self._query(
            "SELECT a.test, s.sha FROM attempts a JOIN sources s ON s.id = a.source "
            f"WHERE {_JUDGED} GROUP BY a.test, s.sha "
            "HAVING sum(a.outcome = 'passed') > 0 AND sum(a.outcome != 'passed') > 0",
            ignored_outcomes(budget_stops),
        )
        return {(tests[test][0], tests[test][1], sha) for test, sha in rows}

    def run_layers(self, budget_stops: str = STOPS_EXCLUDED) -> list[RunLayer]:
        rows = self._query(
            "SELECT s.run_id, t.layer, max(a.id) "
            "FROM attempts a JOIN sources s ON s.id = a.source JOIN tests t ON t.id = a.test "
            f"WHERE {_JUDGED} GROUP BY s.run_id, t.layer",
            ignored_outcomes(budget_stops),
        )
        return [RunLayer(run_id, _layer(layer), last) for run_id, layer, last in rows]

    def failing_finals(self, budget_stops: str = STOPS_EXCLUDED) -> list[RunFinal]:
        tests = self._tests_by_id()
        # SQLite takes the bare columns (sha, outcome) from the row holding max(a.id).
        finals = (
            "SELECT s.run_id AS run_id, s.sha AS sha, a.test AS test, a.outcome AS outcome, "
            "max(a.id) AS last FROM attempts a JOIN sources s ON s.id = a.source "
            f"WHERE {_JUDGED} GROUP BY s.run_id, a.test"
        )
        rows = self._query(
            f"SELECT * FROM ({finals}) WHERE outcome != 'passed'", ignored_outcomes(budget_stops)
        )
        out = []
        for run_id, sha, test, outcome, last in rows:
            test_id, variant, layer = tests[test]
            out.append(RunFinal(run_id, sha, test_id, variant, _layer(layer), outcome, last))
        return out

    def excluded_sources(self) -> list[ExcludedSource]:
        rows = self._query(
            "SELECT key, run_id, sha, excluded FROM sources WHERE excluded IS NOT NULL ORDER BY id"
        )
        return [ExcludedSource(*row) for row in rows]

    def unjudged_attempts(self) -> int:
        rows = self._query(
            "SELECT count(*) FROM attempts a JOIN sources s ON s.id = a.source WHERE s.sha IS NULL"
        )
        return int(rows[0][0])

    def attempts(self) -> Iterator[StoredAttempt]:
        rows = self._query(
            "SELECT test_id, layer, variant, sha, branch, run_id, attempt, outcome, duration, worker, source "
            "FROM attempt_rows ORDER BY id"
        )
        for row in rows:
            yield StoredAttempt(*row)

    def close(self) -> None:
        self._conn.close()
