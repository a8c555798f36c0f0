"""The PostgreSQL history: eight "machines" (processes in their own folders) sharing one history,
a writer killed mid-transaction, the server stopped mid-run, and every bad database refused by name
before anything is written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_agentevals import pg
from pytest_agentevals.errors import ConfigError, HistoryError
from pytest_agentevals.history.model import JUNIT, Attempt, Source
from pytest_agentevals.history.postgres import SCHEMA, PostgresStore
from pytest_agentevals.settings import Settings
from pytest_agentevals.settings.dburl import DatabaseURL

from ..pg_support import NO_POSTGRES, PgServer

if os.environ.get("CI"):
    import psycopg  # CI installs the test extra: a missing driver fails here
else:  # elsewhere these skip, saying why
    psycopg = pytest.importorskip("psycopg", reason=NO_POSTGRES)

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from pytest_agentevals.history.backends import open_store
    from pytest_agentevals.history.model import Attempt, Source
    from pytest_agentevals.settings.dburl import DatabaseURL

    url, machine, go = DatabaseURL(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    store = open_store(url)  # every machine migrates on first use, racing the others
    Path(f"{machine}.ready").touch()
    while not go.exists():
        time.sleep(0.005)
    stored = 0
    for n in range(12):
        # Sources 0-3 are the same files on every machine (a re-ingested artifact): stored once.
        key = f"junit:shared-{n}" if n < 4 else f"junit:m{machine}-{n}"
        attempts = [
            Attempt(f"t.py::test_{i}", "step", "", 1, "passed" if (i + n) % 7 else "failed", 0.1, "main")
            for i in range(50)
        ]
        stored += store.ingest(Source(key, "junit", f"run-{machine}", "c1"), attempts)
    store.close()
    print(stored)
    """
)


def test_eight_machines_share_one_history_and_nothing_is_lost_or_doubled(
    pg_url: DatabaseURL, tmp_path: Path
) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    go = tmp_path / "go"
    folders = [tmp_path / f"machine-{n}" for n in range(8)]
    workers = []
    for n, folder in enumerate(folders):
        folder.mkdir()
        workers.append(
            subprocess.Popen(
                [sys.executable, str(script), pg_url.url, str(n), str(go)],
                cwd=folder,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    deadline = time.monotonic() + 90
    while not all((folder / f"{n}.ready").exists() for n, folder in enumerate(folders)):
        assert time.monotonic() < deadline, "the machines did not start"
        assert all(worker.poll() is None for worker in workers), "a machine ended before it started"
        time.sleep(0.02)
    go.touch()
    stored = [int(worker.communicate(timeout=120)[0]) for worker in workers]
    assert [worker.returncode for worker in workers] == [0] * 8
    # 8 machines x 8 files of their own, and the 4 shared files once, whoever won each.
    assert sum(stored) == 8 * 8 + 4
    store = PostgresStore(pg_url)
    rows = list(store.attempts())
    assert len(rows) == (8 * 8 + 4) * 50
    assert len({(r.source, r.test_id) for r in rows}) == len(rows)  # no attempt doubled
    assert len(store.known_tests()) == 50  # test ids upserted by racing writers: one row each
    counts = {c.test_id: (c.passes, c.failures) for c in store.verdict_counts()}
    assert sum(p + f for p, f in counts.values()) == len(rows)
    store.close()


def test_a_writer_killed_mid_transaction_leaves_nothing_half_written(
    pg_url: DatabaseURL, tmp_path: Path
) -> None:
    code = textwrap.dedent(
        """
        import sys, time
        from pytest_agentevals.history.postgres import PostgresStore
        from pytest_agentevals.history.model import Attempt, Source
        from pytest_agentevals.settings.dburl import DatabaseURL

        class Slow(PostgresStore):
            def _insert(self, cur, source_id, attempts, new):
                done = super()._insert(cur, source_id, attempts, new)
                print("inside", flush=True)  # the source and every attempt sent, not committed
                time.sleep(60)
                return done

        store = Slow(DatabaseURL(sys.argv[1]))
        attempt = Attempt("t.py::a", "step", "", 1, "passed", 1.0)
        store.ingest(Source("junit:first", "junit", "r", "c1"), [attempt])
        print("stored", flush=True)
        """
    )
    store = PostgresStore(pg_url)
    store.ingest(
        Source("junit:before", JUNIT, "r0", "c0"), [Attempt("t.py::z", "step", "", 1, "passed", 1.0)]
    )
    writer = subprocess.Popen([sys.executable, "-c", code, pg_url.url], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "inside"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=10)
    assert not store.has_source("junit:first")
    assert [r.source for r in store.attempts()] == ["junit:before"]
    # The key is free again: the next machine to ingest that file stores it whole.
    assert store.ingest(
        Source("junit:first", JUNIT, "r", "c1"), [Attempt("t.py::a", "step", "", 1, "passed", 1.0)]
    )
    store.close()


def test_the_server_stopped_mid_run_is_one_clear_error_and_loses_nothing(
    pg_server: PgServer, pg_url: DatabaseURL
) -> None:
    store = PostgresStore(pg_url)
    store.append(Source("pytest:a", "pytest", "r1", "c1"), [Attempt("t.py::a", "step", "", 1, "passed", 1.0)])
    pg_server.stop()
    try:
        with pytest.raises(HistoryError) as raised:
            store.append(
                Source("pytest:b", "pytest", "r1", "c1"), [Attempt("t.py::b", "step", "", 1, "failed", 1.0)]
            )
    finally:
        pg_server.start()
    message = str(raised.value)
    assert message.startswith(f"{pg_url}: lost the history database while trying to write to it (")
    assert "everything stored before it is kept" in message
    assert pg_server.password not in message
    store.close()
    again = PostgresStore(pg_url)
    assert [(r.source, r.test_id) for r in again.attempts()] == [("pytest:a", "t.py::a")]
    again.close()


def _names_nothing_secret(message: str, server: PgServer) -> None:
    assert server.password not in message
    assert f"agentevals:***@127.0.0.1:{server.port}" in message


def test_a_wrong_password_is_named_with_the_password_redacted(pg_server: PgServer) -> None:
    url = DatabaseURL(pg_server.url(password="not-the-password"))
    with pytest.raises(HistoryError) as raised:
        PostgresStore(url)
    message = str(raised.value)
    assert "not-the-password" not in message
    _names_nothing_secret(message, pg_server)
    assert "password authentication failed" in message
    assert "check the user and password in the URL" in message


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("postgresql://u:pw@host:notaport/db", "is not a valid database URL"),
        ("postgresql:///db?password=pw", "names no server"),
    ],
)
def test_a_bad_url_is_a_setting_error_with_the_password_redacted(
    raw: str, problem: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.resolve(tmp_path, pyproject={"history": raw}, environ={})
    message = str(raised.value)
    assert problem in message
    assert "[tool.agentevals] history" in message
    assert "pw" not in message.replace("password", "")


def test_the_url_may_come_from_the_environment_and_an_empty_variable_is_unset(tmp_path: Path) -> None:
    url = "postgresql://ci:hunter2@db.example:5432/evals"
    settings = Settings.resolve(
        tmp_path, pyproject={"history": "h.sqlite"}, environ={"AGENTEVALS_HISTORY": url}
    )
    assert settings.history == DatabaseURL(url)
    assert settings.sources["history"] == "env"
    assert "hunter2" not in str(settings.history) + repr(settings.history) + repr(settings)
    unset = Settings.resolve(tmp_path, pyproject={"history": "h.sqlite"}, environ={"AGENTEVALS_HISTORY": ""})
    assert unset.history == tmp_path / "h.sqlite"  # a CI secret that is not set: today's file


def test_an_unsupported_server_version_is_refused(
    pg_url: DatabaseURL, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg, "MIN_SERVER_VERSION", 990000)
    with pytest.raises(HistoryError, match=r"runs PostgreSQL 15, and the history needs 99 or newer"):
        PostgresStore(pg_url)
    with psycopg.connect(pg_url.url) as conn:  # nothing was created
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (SCHEMA,)).fetchone() is None


@pytest.mark.parametrize(
    ("sql", "found"),
    [
        (
            f"CREATE FUNCTION {SCHEMA}.pass() RETURNS trigger LANGUAGE plpgsql AS "
            "'BEGIN NEW.outcome := ''passed''; RETURN NEW; END';"
            f"CREATE TRIGGER whitewash BEFORE INSERT ON {SCHEMA}.attempts "
            f"FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.pass()",
            "a function agentevals_history.pass() (in the schema; remove it: DROP ROUTINE "
            "agentevals_history.pass()); a trigger 'whitewash' on attempts (CREATE TRIGGER whitewash",
        ),
        (f"CREATE VIEW {SCHEMA}.lies AS SELECT 1 AS x", "a view 'lies'"),
        (
            f"CREATE RULE hide AS ON INSERT TO {SCHEMA}.attempts WHERE NEW.outcome = 'failed' "
            "DO INSTEAD NOTHING",
            "a rule 'hide' on attempts",
        ),
        (
            "CREATE EXTENSION IF NOT EXISTS postgres_fdw; "
            "CREATE SERVER elsewhere FOREIGN DATA WRAPPER postgres_fdw;"
            f"CREATE FOREIGN TABLE {SCHEMA}.remote (x int) SERVER elsewhere",
            "a foreign table 'remote'",
        ),
        (f"UPDATE {SCHEMA}.meta SET value = '7'", "newer pytest-agentevals (schema 7, this one reads 2)"),
    ],
    ids=["trigger", "view", "rule", "foreign-table", "newer"],
)
def test_a_history_schema_not_ours_is_refused_before_anything_is_written(
    pg_url: DatabaseURL, sql: str, found: str
) -> None:
    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url.url, autocommit=True) as conn:
        conn.execute(sql)
    with pytest.raises(HistoryError) as raised:
        PostgresStore(pg_url)
    message = str(raised.value)
    assert found in message
    assert message.startswith(str(pg_url))
    assert "nothing was written" in message or "upgrade pytest-agentevals" in message
    with psycopg.connect(pg_url.url) as conn:
        assert conn.execute(f"SELECT count(*) FROM {SCHEMA}.sources").fetchone() == (0,)


def test_jobs_starting_together_migrate_once(pg_url: DatabaseURL) -> None:
    """Both wait on the migration lock while it is held; the first to get it creates the schema, and
    the other must see it committed (a cached catalog lookup did not: "relation already exists")."""
    import threading

    from pytest_agentevals.guards.pg_ledger import LOCK_KEY as LEDGER_LOCK
    from pytest_agentevals.guards.pg_ledger import PostgresLedger
    from pytest_agentevals.history.postgres import LOCK_KEY

    errors: list[BaseException] = []

    def open_both() -> None:
        try:
            PostgresStore(pg_url).close()
            PostgresLedger(pg_url).state()
        except BaseException as exc:
            errors.append(exc)

    with psycopg.connect(pg_url.url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s), pg_advisory_lock(%s)", (LOCK_KEY, LEDGER_LOCK))
        threads = [threading.Thread(target=open_both) for _ in range(3)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)  # every opener has read "no schema yet" and waits on the lock
        holder.execute("SELECT pg_advisory_unlock_all()")
        for thread in threads:
            thread.join(timeout=60)
    assert errors == []
