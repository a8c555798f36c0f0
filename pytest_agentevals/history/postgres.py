"""The shared history store: PostgreSQL, for every CI job and machine of a team at once.

- The tables live in the schema `agentevals_history` of the database the URL names. Its version is
  kept in `meta`; a first use creates it (and a later release migrates it) in one transaction under
  a transaction-level advisory lock, so two jobs starting together never both create it.
- A schema newer than ours, or holding an object we did not create (a trigger, rule, policy, view,
  foreign table, function...), is refused by name before anything is written (see `..pg`).
- Every write is one transaction: a batch is stored whole or not at all, and a writer killed or cut
  off mid-write leaves nothing (the server rolls the transaction back). `ingest` is idempotent per
  source key across machines: the source row is inserted with ON CONFLICT DO NOTHING, which waits
  for a concurrent insert of the same key and then finds it there.
- Attempts go in with COPY; test ids are upserted in a sorted batch, so concurrent writers lock the
  same keys in the same order and never deadlock on them (a deadlock or serialization failure
  retries the transaction a few times anyway).
- Reads are the same aggregates as the SQLite store's, in PostgreSQL's dialect.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .. import pg
from ..errors import HistoryError
from ..settings.dburl import DatabaseURL
from .model import (
    BUDGET_STOPPED,
    SKIPS_ONLY,
    STOPS_EXCLUDED,
    Attempt,
    Source,
    StoredAttempt,
    ignored_outcomes,
)
from .postgres_schema import EXPECTED, OLDER
from .store import ExcludedSource, RunFinal, RunLayer, VerdictCount

if TYPE_CHECKING:
    import psycopg

SCHEMA = "agentevals_history"
SCHEMA_VERSION = 2
LOCK_KEY = 0x61676576686973  # pg_advisory_xact_lock key of the history's migrations ("agevhis")
RETRIES = 5

# One step per version: MIGRATIONS[n] takes the schema from version n to n + 1 (0 is "none yet").
MIGRATIONS: tuple[str, ...] = (
    f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE TABLE {SCHEMA}.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE {SCHEMA}.sources (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key      text NOT NULL UNIQUE,
    kind     text NOT NULL,
    run_id   text NOT NULL,
    sha      text,
    branch   text,
    path     text,
    created  double precision NOT NULL,
    excluded text
);
CREATE TABLE {SCHEMA}.tests (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    test_id text NOT NULL,
    variant text NOT NULL,
    layer   text NOT NULL,
    UNIQUE (test_id, variant, layer)
);
CREATE TABLE {SCHEMA}.attempts (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source   bigint NOT NULL REFERENCES {SCHEMA}.sources (id),
    test     bigint NOT NULL REFERENCES {SCHEMA}.tests (id),
    attempt  integer NOT NULL,
    outcome  text NOT NULL CHECK (outcome IN ('passed', 'failed', 'error', 'skipped')),
    duration double precision NOT NULL,
    worker   text
);
CREATE INDEX attempts_source ON {SCHEMA}.attempts (source);
""",
    # 1 -> 2: budget_stopped is an outcome (a budget stopped the test's run). Every row is kept; the
    # constraint keeps its name, so the catalog reads as a new schema's does.
    f"""
ALTER TABLE {SCHEMA}.attempts DROP CONSTRAINT attempts_outcome_check;
ALTER TABLE {SCHEMA}.attempts ADD CONSTRAINT attempts_outcome_check
    CHECK (outcome IN ('passed', 'failed', 'error', 'skipped', 'budget_stopped'));
""",
)

TestKey = tuple[str, str, str]  # test_id, variant, layer ('' outside the pyramid)
T = TypeVar("T")

_JUDGED = "s.excluded IS NULL AND s.sha IS NOT NULL AND a.outcome NOT IN (%s, %s)"
_FIX = (
    "nothing was written; point --agentevals-history / [tool.agentevals] history / $AGENTEVALS_HISTORY "
    "at another database, or drop the schema {schema} by hand once you know what it holds"
)


def _layer(value: str) -> str | None:
    return value or None


class PostgresStore:
    """A `HistoryStore` in a PostgreSQL database. Opening it creates (or migrates) the schema."""

    def __init__(self, url: DatabaseURL) -> None:
        self.url = url
        self._psycopg = pg.load_driver(url, HistoryError)
        self._tests: dict[TestKey, int] = {}
        self._session = pg.connect(url, HistoryError, what="history")
        self._conn = self._session.conn
        try:
            self._guard("open", self._prepare)
        except BaseException:
            self._session.close()
            raise

    @property
    def location(self) -> str:
        return str(self.url)

    # -- plumbing ---------------------------------------------------------------------------------

    def _guard(self, doing: str, action: Callable[[], T]) -> T:
        """Run `action`, turning a database failure into one HistoryError naming the server; a
        deadlock or serialization failure between writers is retried; a timeout is not."""
        psycopg = self._psycopg
        for attempt in range(RETRIES):
            try:
                with self._session.answering():
                    return action()
            except psycopg.Error as exc:
                problem = pg.timed_out(exc, self.url.timeouts, stalled=self._session.watchdog.fired)
                if problem is None:
                    self._fail(doing, exc, attempt)
                    continue
                raise HistoryError(
                    f"{self.url}: the history database timed out while trying to {doing} it: {problem}; "
                    "whatever it was writing was rolled back, and everything stored before is kept; "
                    + pg.TIMEOUT_FIX
                ) from None
        raise AssertionError("unreachable")

    def _fail(self, doing: str, exc: Exception, attempt: int) -> None:
        """Raise the HistoryError for a failure that is not a timeout; return to retry a collision."""
        errors = self._psycopg.errors
        if isinstance(exc, errors.DeadlockDetected | errors.SerializationFailure):
            if attempt == RETRIES - 1:
                raise HistoryError(
                    f"{self.url}: could not {doing} the history: writers kept colliding; try again"
                ) from None
            time.sleep(0.05 * (attempt + 1))
            return
        problem = pg.scrub(str(exc), self.url)
        if isinstance(exc, self._psycopg.OperationalError):
            raise HistoryError(
                f"{self.url}: lost the history database while trying to {doing} it ({problem}); the "
                "write in progress was rolled back and everything stored before it is kept; "
                + pg.connection_fix(problem)
            ) from None
        raise HistoryError(
            f"{self.url}: cannot {doing} the history database ({problem}); "
            "nothing of this write was stored; check the server's log"
        ) from None

    def _prepare(self) -> None:
        version = self._checked()
        if version != SCHEMA_VERSION:
            with self._conn.transaction():
                self._conn.execute("SELECT pg_catalog.pg_advisory_xact_lock(%s)", (LOCK_KEY,))
                # Another job may have migrated it while we waited for the lock.
                version = self._checked()
                for step in range(version or 0, SCHEMA_VERSION):
                    self._conn.execute(MIGRATIONS[step])
                self._conn.execute(
                    f"INSERT INTO {SCHEMA}.meta (key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    (str(SCHEMA_VERSION),),
                )
        self._load_tests()

    def _checked(self) -> int | None:
        """The schema's version, once the schema is found to be ours (`pg.inspect`): anything else is
        refused before anything is written."""
        version, found = pg.inspect(self._conn, SCHEMA, EXPECTED, newest=SCHEMA_VERSION, older=OLDER)
        if version is not None and version > SCHEMA_VERSION:
            raise HistoryError(
                f"{self.url}: this history was written by a newer pytest-agentevals (schema {version}, "
                f"this one reads {SCHEMA_VERSION}); upgrade pytest-agentevals, or point the history "
                "at another database"
            )
        if version == -1:
            raise HistoryError(
                f"{self.url}: the schema {SCHEMA} holds a meta table that is not an agentevals "
                "history's; " + _FIX.format(schema=SCHEMA)
            )
        if found:
            more = f" and {len(found) - 5} more" if len(found) > 5 else ""
            raise HistoryError(
                f"{self.url}: is not an agentevals history as it stands: the schema {SCHEMA} holds "
                f"{'; '.join(found[:5])}{more}; a history is data only, and an object of its own (a "
                "trigger, rule, policy, view, function, or a default, constraint or index calling one) "
                "could run code or change outcomes, so the database was not used; remove what is named "
                "(each with the statement beside it), or " + _FIX.format(schema=SCHEMA)
            )
        return version

    def _load_tests(self) -> None:
        rows = self._conn.execute(f"SELECT id, test_id, variant, layer FROM {SCHEMA}.tests")
        self._tests = {(test_id, variant, layer): key for key, test_id, variant, layer in rows}

    def _test_ids(self, cur: psycopg.Cursor[Any], keys: set[TestKey], new: dict[TestKey, int]) -> None:
        """Ids of `keys` not yet known, upserted in one sorted batch, into `new`."""
        missing = sorted(keys - self._tests.keys() - new.keys())
        if not missing:
            return
        columns = [list(column) for column in zip(*missing, strict=True)]
        cur.execute(
            f"INSERT INTO {SCHEMA}.tests (test_id, variant, layer) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]) ORDER BY 1, 2, 3 "
            "ON CONFLICT DO NOTHING",
            columns,
        )
        cur.execute(
            f"SELECT t.id, t.test_id, t.variant, t.layer FROM {SCHEMA}.tests t "
            "JOIN unnest(%s::text[], %s::text[], %s::text[]) AS k (test_id, variant, layer) "
            "USING (test_id, variant, layer)",
            columns,
        )
        for key, test_id, variant, layer in cur.fetchall():
            new[(test_id, variant, layer)] = int(key)

    def _insert(
        self,
        cur: psycopg.Cursor[Any],
        source_id: int,
        attempts: Sequence[Attempt],
        new: dict[TestKey, int],
    ) -> int:
        keys = {(a.test_id, a.variant, a.layer or "") for a in attempts}
        self._test_ids(cur, keys, new)
        known = self._tests
        with cur.copy(
            f"COPY {SCHEMA}.attempts (source, test, attempt, outcome, duration, worker) FROM STDIN"
        ) as copy:
            for test_id, layer, variant, number, outcome, duration, worker in attempts:
                key = (test_id, variant, layer or "")
                copy.write_row((source_id, known.get(key) or new[key], number, outcome, duration, worker))
        return len(attempts)

    def _source(self, cur: psycopg.Cursor[Any], source: Source) -> tuple[int, bool]:
        """The source's id, inserting it when new; and whether it was new."""
        cur.execute(
            f"INSERT INTO {SCHEMA}.sources (key, kind, run_id, sha, branch, path, created) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING RETURNING id",
            (source.key, source.kind, source.run_id, source.sha, source.branch, source.path, time.time()),
        )
        row = cur.fetchone()
        if row is not None:
            return int(row[0]), True
        cur.execute(f"SELECT id FROM {SCHEMA}.sources WHERE key = %s", (source.key,))
        found = cur.fetchone()
        assert found is not None  # ON CONFLICT found it; sources are never deleted
        return int(found[0]), False

    def _run_write(self, write: Callable[[psycopg.Cursor[Any], dict[TestKey, int]], T]) -> T:
        """Run `write(cursor, new_tests)` in one transaction; remember new test ids once committed."""

        def action() -> tuple[T, dict[TestKey, int]]:
            new: dict[TestKey, int] = {}
            with self._conn.transaction(), self._conn.cursor() as cur:
                return write(cur, new), new

        result, new = self._guard("write to", action)
        self._tests.update(new)  # only now that the transaction committed are these ids real
        return result

    # -- writes -----------------------------------------------------------------------------------

    def append(self, source: Source, attempts: Sequence[Attempt]) -> int:
        def write(cur: psycopg.Cursor[Any], new: dict[TestKey, int]) -> int:
            source_id, _ = self._source(cur, source)
            return self._insert(cur, source_id, attempts, new)

        return self._run_write(write)

    def ingest(self, source: Source, attempts: Sequence[Attempt]) -> bool:
        def write(cur: psycopg.Cursor[Any], new: dict[TestKey, int]) -> bool:
            source_id, fresh = self._source(cur, source)
            if not fresh:
                return False
            self._insert(cur, source_id, attempts, new)
            return True

        return self._run_write(write)

    def exclude(self, key: str, reason: str) -> None:
        self._run_write(
            lambda cur, _new: cur.execute(
                f"UPDATE {SCHEMA}.sources SET excluded = %s WHERE key = %s", (reason, key)
            )
        )

    # -- reads ------------------------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._guard("read", lambda: self._conn.execute(sql, params).fetchall())

    def _tests_by_id(self) -> dict[int, TestKey]:
        return {
            key: (t, v, layer)
            for key, t, v, layer in self._query(f"SELECT id, test_id, variant, layer FROM {SCHEMA}.tests")
        }

    def has_source(self, key: str) -> bool:
        return bool(self._query(f"SELECT 1 FROM {SCHEMA}.sources WHERE key = %s", (key,)))

    def known_tests(self) -> dict[str, str | None]:
        rows = self._query(f"SELECT test_id, layer FROM {SCHEMA}.tests ORDER BY id")
        return {test_id: _layer(layer) for test_id, layer in rows}

    def verdict_counts(self, per_layer: int | None = None) -> list[VerdictCount]:
        tests = self._tests_by_id()
        grouped = (
            "SELECT a.test AS test, s.sha AS sha, count(*) FILTER (WHERE a.outcome = 'passed') AS passes, "
            "count(*) FILTER (WHERE a.outcome NOT IN ('passed', %s)) AS failures, "
            "count(*) FILTER (WHERE a.outcome = %s) AS stopped, max(a.id) AS last, "
            "row_number() OVER (PARTITION BY t.layer ORDER BY max(a.id) DESC) AS recency "
            f"FROM {SCHEMA}.attempts a JOIN {SCHEMA}.sources s ON s.id = a.source "
            f"JOIN {SCHEMA}.tests t ON t.id = a.test WHERE {_JUDGED} GROUP BY a.test, s.sha, t.layer"
        )
        rows = self._query(
            f"SELECT test, sha, passes, failures, stopped, last FROM ({grouped}) g "
            "WHERE %s::bigint IS NULL OR recency <= %s::bigint ORDER BY last DESC",
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
            f"SELECT a.test, s.sha FROM {SCHEMA}.attempts a JOIN {SCHEMA}.sources s ON s.id = a.source "
            f"WHERE {_JUDGED} GROUP BY a.test, s.sha "
            "HAVING count(*) FILTER (WHERE a.outcome = 'passed') > 0 "
            "AND count(*) FILTER (WHERE a.outcome != 'passed') > 0",
            ignored_outcomes(budget_stops),
        )
        return {(tests[test][0], tests[test][1], sha) for test, sha in rows}

    def run_layers(self, budget_stops: str = STOPS_EXCLUDED) -> list[RunLayer]:
        rows = self._query(
            "SELECT s.run_id, t.layer, max(a.id) "
            f"FROM {SCHEMA}.attempts a JOIN {SCHEMA}.sources s ON s.id = a.source "
            f"JOIN {SCHEMA}.tests t ON t.id = a.test WHERE {_JUDGED} GROUP BY s.run_id, t.layer",
            ignored_outcomes(budget_stops),
        )
        return [RunLayer(run_id, _layer(layer), last) for run_id, layer, last in rows]

    def failing_finals(self, budget_stops: str = STOPS_EXCLUDED) -> list[RunFinal]:
        tests = self._tests_by_id()
        finals = (
            "SELECT DISTINCT ON (s.run_id, a.test) s.run_id AS run_id, s.sha AS sha, a.test AS test, "
            f"a.outcome AS outcome, a.id AS last FROM {SCHEMA}.attempts a "
            f"JOIN {SCHEMA}.sources s ON s.id = a.source WHERE {_JUDGED} "
            "ORDER BY s.run_id, a.test, a.id DESC"
        )
        rows = self._query(
            f"SELECT * FROM ({finals}) f WHERE outcome != 'passed'", ignored_outcomes(budget_stops)
        )
        out = []
        for run_id, sha, test, outcome, last in rows:
            test_id, variant, layer = tests[test]
            out.append(RunFinal(run_id, sha, test_id, variant, _layer(layer), outcome, last))
        return out

    def excluded_sources(self) -> list[ExcludedSource]:
        rows = self._query(
            f"SELECT key, run_id, sha, excluded FROM {SCHEMA}.sources WHERE excluded IS NOT NULL ORDER BY id"
        )
        return [ExcludedSource(*row) for row in rows]

    def unjudged_attempts(self) -> int:
        rows = self._query(
            f"SELECT count(*) FROM {SCHEMA}.attempts a JOIN {SCHEMA}.sources s ON s.id = a.source "
            "WHERE s.sha IS NULL"
        )
        return int(rows[0][0])

    def attempts(self) -> Iterator[StoredAttempt]:
        rows = self._query(
            "SELECT t.test_id, NULLIF(t.layer, ''), t.variant, s.sha, s.branch, s.run_id, a.attempt, "
            f"a.outcome, a.duration, a.worker, s.key FROM {SCHEMA}.attempts a "
            f"JOIN {SCHEMA}.sources s ON s.id = a.source JOIN {SCHEMA}.tests t ON t.id = a.test "
            "ORDER BY a.id"
        )
        for row in rows:
            yield StoredAttempt(*row)

    def close(self) -> None:
        self._session.close()
