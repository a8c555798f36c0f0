"""The PostgreSQL stores against servers gone bad: a server that never answers the connection, one
that completes the login and then never answers, a lock held by another session, a backend stopped
mid-run. Every case ends in one error naming the server (its password redacted) and the timeout that
ran out, never a hang; the day ledger fails closed."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytest_agentevals as ae
from pytest_agentevals.errors import ConfigError, HistoryError, LedgerError
from pytest_agentevals.guards import DailyBudget
from pytest_agentevals.guards.pg_ledger import SCHEMA as LEDGER_SCHEMA
from pytest_agentevals.guards.pg_ledger import PostgresLedger
from pytest_agentevals.history.model import Attempt, Source
from pytest_agentevals.history.postgres import SCHEMA as HISTORY_SCHEMA
from pytest_agentevals.history.postgres import PostgresStore
from pytest_agentevals.settings import Settings
from pytest_agentevals.settings.dburl import DatabaseURL, DbTimeouts

from .guard_support import events_of, kinds
from .pg_support import NO_POSTGRES, FakeServer, PgServer

if os.environ.get("CI"):
    import psycopg  # CI installs the test extra: a missing driver fails here
else:  # elsewhere these skip, saying why
    psycopg = pytest.importorskip("psycopg", reason=NO_POSTGRES)

SECRET = "s3cr/t@pw:x"  # characters a URL must escape: %2F %40 %3A
QUICK = DbTimeouts(connect=2, lock=0.3, statement=0.5, idle_in_transaction=5)
# For a real server on a loaded machine: a short lock timeout, and statements given time to answer.
LOCKS = DbTimeouts(connect=2, lock=0.3, statement=5, idle_in_transaction=5)


def quick(url: str | DatabaseURL, timeouts: DbTimeouts = QUICK) -> DatabaseURL:
    base = url if isinstance(url, DatabaseURL) else DatabaseURL(url)
    return dataclasses.replace(base, timeouts=timeouts)


@pytest.fixture
def silent() -> Iterator[FakeServer]:
    server = FakeServer(login=False)
    yield server
    server.close()


@pytest.fixture
def stalled() -> Iterator[FakeServer]:
    server = FakeServer(login=True)
    yield server
    server.close()


def _one_sentence_naming(message: str, url: DatabaseURL, *timeout: str) -> None:
    assert message.startswith(f"{url}: ")
    assert "***" in message
    assert "s3cr" not in message
    assert "%2F" not in message
    for words in timeout:
        assert words in message
    assert "\n" not in message


def test_a_server_that_never_answers_the_connection_is_given_up_after_the_connect_timeout(
    silent: FakeServer,
) -> None:
    url = quick(silent.url("s3cr%2Ft%40pw%3Ax"))
    with pytest.raises(HistoryError) as raised:
        PostgresStore(url)
    _one_sentence_naming(
        str(raised.value),
        url,
        "did not complete the connection within 2 s (connect in [tool.agentevals.db_timeouts])",
    )


def test_a_server_that_logs_in_then_stalls_is_given_up_on_the_client(stalled: FakeServer) -> None:
    url = quick(stalled.url("s3cr%2Ft%40pw%3Ax"))
    with pytest.raises(HistoryError) as raised:
        PostgresStore(url)
    assert stalled.logins == 1  # it got past the login: the statement is what never came back
    _one_sentence_naming(
        str(raised.value),
        url,
        "timed out: the server stopped answering: nothing came back within 1.5 s",
        "statement = 0.5 s in [tool.agentevals.db_timeouts]",
    )


def test_a_ledger_guarded_run_against_a_stalled_server_is_refused_before_any_call(
    stalled: FakeServer, tmp_path: Path
) -> None:
    url = quick(stalled.url("s3cr%2Ft%40pw%3Ax"))
    path = tmp_path / "run.trace.jsonl"
    with pytest.raises(LedgerError) as raised:
        ae.Recorder(path, guards=[DailyBudget(0.01, url)]).start()
    _one_sentence_naming(str(raised.value), url, "stopped answering", "statement = 0.5 s")
    assert kinds(events_of(path)) == ["run_start", "guard", "run_end"]  # refused: no call went out
    assert "s3cr" not in path.read_text()


def test_the_pytest_session_against_a_stalled_server_ends_and_says_why(
    stalled: FakeServer, pytester: pytest.Pytester
) -> None:
    pytester.makepyfile("def test_one():\n    pass\n")
    url = stalled.url("s3cr%2Ft%40pw%3Ax")
    timeouts = "--agentevals-db-timeouts=connect=2,statement=0.5"
    warned = pytester.runpytest(f"--agentevals-history={url}", timeouts)
    warned.assert_outcomes(passed=1)
    out = warned.stdout.str() + warned.stderr.str()
    assert "history not recorded" in out
    assert "stopped answering" in out
    failed = pytester.runpytest(f"--agentevals-history={url}", timeouts, "--agentevals-flaky=fail")
    assert failed.ret == pytest.ExitCode.USAGE_ERROR
    out += failed.stdout.str() + failed.stderr.str()
    assert "stopped answering: nothing came back within 1.5 s" in failed.stderr.str()
    assert "s3cr" not in out
    assert "%2F" not in out


def test_a_lock_held_by_another_session_is_given_up_after_the_lock_timeout(pg_url: DatabaseURL) -> None:
    url = quick(pg_url, LOCKS)
    store = PostgresStore(url)
    attempt = [Attempt("t.py::a", "step", "", 1, "passed", 1.0)]
    with psycopg.connect(pg_url.url) as holder:
        holder.execute(f"LOCK TABLE {HISTORY_SCHEMA}.attempts IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(HistoryError) as raised:
            store.append(Source("pytest:a", "pytest", "r", "c1"), attempt)
    _one_sentence_naming(
        str(raised.value), url, "waited 0.3 s for a lock another session holds", "lock = 0.3 s"
    )
    assert "rolled back" in str(raised.value)
    store.append(Source("pytest:a", "pytest", "r", "c1"), attempt)  # the lock gone, the store goes on
    assert [r.test_id for r in store.attempts()] == ["t.py::a"]
    store.close()


def test_the_ledger_fails_closed_on_a_locked_day_and_on_a_stopped_backend(pg_url: DatabaseURL) -> None:
    url = quick(pg_url, LOCKS)
    ledger = PostgresLedger(url)
    assert ledger.start_run("r", 1.0) is None
    with psycopg.connect(pg_url.url) as holder:
        holder.execute(f"SELECT * FROM {LEDGER_SCHEMA}.days WHERE day = %s FOR UPDATE", (dt.date.today(),))
        with pytest.raises(LedgerError) as locked:
            ledger.hold("r", [], 0.0, 0.01, 0.05, 1.0)
    _one_sentence_naming(str(locked.value), url, "waited 0.3 s for a lock", "(fail closed)")

    url = quick(pg_url)
    ledger = PostgresLedger(url)
    assert ledger.start_run("r2", 1.0) is None  # a new connection, a new backend
    assert ledger._conn is not None
    backend = ledger._conn.info.backend_pid
    os.kill(backend, signal.SIGSTOP)  # alive to the kernel, deaf to cancels and to its own timeouts
    try:
        with pytest.raises(LedgerError) as stopped:
            ledger.hold("r2", [], 0.0, 0.01, 0.05, 1.0)
    finally:
        os.kill(backend, signal.SIGCONT)
    _one_sentence_naming(str(stopped.value), url, "stopped answering: nothing came back within 1.5 s")
    assert "a run under max_daily_cost_usd does not start, or stops" in str(stopped.value)
    assert ledger._conn is None  # the connection is dropped, not reused


def test_every_connection_runs_under_the_timeouts(pg_url: DatabaseURL) -> None:
    store = PostgresStore(quick(pg_url))
    shown = store._conn.execute(
        "SELECT current_setting('lock_timeout'), current_setting('statement_timeout'), "
        "current_setting('idle_in_transaction_session_timeout'), current_setting('search_path')"
    ).fetchone()
    store.close()
    assert shown == ("300ms", "500ms", "5s", "pg_catalog, pg_temp")


def test_the_timeouts_are_a_setting_laid_key_by_key_and_checked(tmp_path: Path) -> None:
    url = "postgresql://ci:pw@db.example:5432/evals"
    settings = Settings.resolve(
        tmp_path,
        cli={"db_timeouts": ["lock=2", "statement=7.5"]},
        pyproject={"db_timeouts": {"connect": 3, "lock": 9}, "history": url, "ledger": url},
        environ={},
    )
    assert settings.db_timeouts == DbTimeouts(connect=3, lock=2.0, statement=7.5)
    assert isinstance(settings.history, DatabaseURL)
    assert isinstance(settings.ledger, DatabaseURL)
    assert settings.history.timeouts == settings.ledger.timeouts == settings.db_timeouts
    assert Settings.resolve(tmp_path, environ={}).db_timeouts == DbTimeouts()
    for table, key in [
        ({"lock": 0}, "lock"),
        ({"statement": "30"}, "statement"),
        ({"connect": 1}, "connect"),
        ({"connect": 2.5}, "connect"),
        ({"wait": 1}, "wait"),
    ]:
        with pytest.raises(ConfigError, match=rf"\[tool.agentevals\] db_timeouts.{key}"):
            Settings.resolve(tmp_path, pyproject={"db_timeouts": table}, environ={})


# -- passwords: never printed, however they are written ---------------------------------------------

HOSTILE = "Hunter/Two@Three:Four?Five%Six"
PIECES = ("Hunter", "Two", "Three", "Four", "Five", "Six")


def _shows_no_piece(*texts: str) -> None:
    for text in texts:
        for piece in PIECES:
            assert piece not in text, text


@pytest.fixture
def hostile_urls(pg_server: PgServer, pg_url: DatabaseURL) -> dict[str, str]:
    """URLs of a user whose password holds every character a URL cuts at: percent-encoded (right,
    to a database that exists and to one that does not, and a wrong password) and raw."""
    import secrets
    from urllib.parse import quote

    role = f"hostile_{secrets.token_hex(4)}"
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{HOSTILE}'")
        admin.execute(f"GRANT ALL ON DATABASE {pg_url.url.rsplit('/', 1)[1]} TO {role}")
        admin.execute(f"ALTER DATABASE {pg_url.url.rsplit('/', 1)[1]} OWNER TO {role}")
    base = f"127.0.0.1:{pg_server.port}"
    encoded = quote(HOSTILE, safe="")
    database = pg_url.url.rsplit("/", 1)[1]
    return {
        "works": f"postgresql://{role}:{encoded}@{base}/{database}",
        "no-database": f"postgresql://{role}:{encoded}@{base}/nowhere",
        "wrong-password": f"postgresql://{role}:{encoded}Seven@{base}/{database}",
        "raw": f"postgresql://{role}:{HOSTILE}@{base}/{database}",
    }


def test_an_encoded_hostile_password_connects(hostile_urls: dict[str, str]) -> None:
    store = PostgresStore(DatabaseURL(hostile_urls["works"]))
    _shows_no_piece(store.location, repr(store.url))
    store.close()


@pytest.mark.parametrize("case", ["no-database", "wrong-password", "raw"])
def test_no_error_path_shows_the_password(
    case: str, hostile_urls: dict[str, str], pytester: pytest.Pytester, tmp_path: Path
) -> None:
    from .conftest import run_agentevals

    url = hostile_urls[case]
    # pytest: a history that cannot be opened is reported (or, with flaky=fail, stops the session).
    pytester.makepyfile("def test_one():\n    pass\n")
    warned = pytester.runpytest(f"--agentevals-history={url}")
    failed = pytester.runpytest(f"--agentevals-history={url}", "--agentevals-flaky=fail")
    assert failed.ret == pytest.ExitCode.USAGE_ERROR
    # `agentevals flaky report`, the URL from the environment as CI passes it.
    report = run_agentevals("flaky", "report", cwd=tmp_path, bare_env=True, env={"AGENTEVALS_HISTORY": url})
    assert report.returncode != 0
    # A run under the day ledger: refused, its trace and the error clean.
    path = tmp_path / "run.trace.jsonl"
    with pytest.raises((LedgerError, ConfigError)) as raised:
        ae.Recorder(path, guards=[DailyBudget(0.01, DatabaseURL(url))]).start()
    _shows_no_piece(
        warned.stdout.str(),
        warned.stderr.str(),
        failed.stdout.str(),
        failed.stderr.str(),
        report.stdout,
        report.stderr,
        str(raised.value),
        path.read_text() if path.exists() else "",
    )
    assert "***" in failed.stderr.str() + report.stderr


# -- the schema check: columns, defaults, constraints, indexes, triggers, rules, policies, functions --

H, L = HISTORY_SCHEMA, LEDGER_SCHEMA
WHITEWASH = (
    "CREATE FUNCTION public.whitewash() RETURNS integer LANGUAGE sql AS "
    f"$$ UPDATE {H}.attempts SET outcome = 'passed' WHERE outcome <> 'passed'; SELECT 0 $$;"
)
FORGIVE = (
    "CREATE FUNCTION public.forgive() RETURNS boolean LANGUAGE sql AS "
    f"$$ UPDATE {L}.days SET spent_usd = 0, reserved_usd = 0, tripped_limit = NULL; SELECT true $$;"
)


def test_a_fresh_schema_reads_exactly_as_expected(pg_url: DatabaseURL) -> None:
    from pytest_agentevals import pg
    from pytest_agentevals.guards.pg_ledger_schema import EXPECTED as LEDGER
    from pytest_agentevals.history.postgres_schema import EXPECTED as HISTORY

    PostgresStore(pg_url).close()
    PostgresLedger(pg_url).state()
    with psycopg.connect(pg_url.url) as conn:
        conn.execute("SET search_path = pg_catalog, pg_temp")
        assert pg.snapshot(pg.describe(conn, H)) == HISTORY
        assert pg.snapshot(pg.describe(conn, L)) == LEDGER


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        pytest.param(
            WHITEWASH + f"ALTER TABLE {H}.attempts ADD COLUMN shade integer;"
            f"ALTER TABLE {H}.attempts ALTER COLUMN shade SET DEFAULT whitewash()",
            "a column 'attempts.shade' (integer DEFAULT public.whitewash(); remove it: "
            f"ALTER TABLE {H}.attempts DROP COLUMN shade)",
            id="default-rewrites-failures",
        ),
        pytest.param(
            WHITEWASH + f"ALTER TABLE {H}.sources ADD CONSTRAINT fine CHECK (whitewash() = 0) NOT VALID",
            "a constraint 'fine' on sources (CHECK ((public.whitewash() = 0)) NOT VALID; remove it: "
            f"ALTER TABLE {H}.sources DROP CONSTRAINT fine)",
            id="check-rewrites-failures",
        ),
        pytest.param(
            f"ALTER TABLE {H}.sources ALTER COLUMN excluded SET DEFAULT pg_sleep(30)::text",
            "a column 'sources.excluded' defined as 'text DEFAULT (pg_sleep((30)::double precision))::text' "
            "where ours is 'text'",
            id="default-sleeps",
        ),
        pytest.param(
            f"ALTER TABLE {H}.attempts DROP CONSTRAINT attempts_outcome_check",
            "no constraint attempts.attempts_outcome_check (ours has",
            id="check-dropped",
        ),
        pytest.param(
            f"DROP INDEX {H}.attempts_source; CREATE INDEX attempts_source ON {H}.attempts (lower(outcome))",
            f"an index 'attempts_source' defined as 'CREATE INDEX attempts_source ON {H}.attempts "
            "USING btree (lower(outcome))'",
            id="index-redefined",
        ),
        pytest.param(
            "CREATE DOMAIN public.verdict AS text CHECK (VALUE <> '');"
            f"ALTER TABLE {H}.attempts ALTER COLUMN worker TYPE public.verdict",
            "a column 'attempts.worker' defined as 'public.verdict' where ours is 'text'",
            id="column-type-domain",
        ),
        pytest.param(
            f"ALTER TABLE {H}.attempts ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY",
            "row-level security on 'attempts' (forced; remove it: ALTER TABLE",
            id="row-level-security",
        ),
        pytest.param(
            f"ALTER TABLE {H}.sources ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;"
            f"CREATE POLICY peek ON {H}.meta USING (pg_sleep(30) IS NULL)",
            "a row-level policy 'peek' on meta (* USING (pg_sleep((30)::double precision) IS NULL)",
            id="policy-sleeps-on-read",
        ),
        pytest.param(
            f"CREATE TABLE public.fake () INHERITS ({H}.attempts)",
            f"a table public.fake inheriting from {H}.attempts",
            id="inherited",
        ),
    ],
)
def test_a_history_schema_changed_anywhere_is_refused_by_name(
    pg_url: DatabaseURL, sql: str, named: str
) -> None:
    store = PostgresStore(pg_url)
    store.append(Source("pytest:a", "pytest", "r", "c1"), [Attempt("t.py::a", "step", "", 1, "failed", 1.0)])
    store.close()
    with psycopg.connect(pg_url.url, autocommit=True) as conn:
        conn.execute(sql)
    with pytest.raises(HistoryError) as raised:
        PostgresStore(quick(pg_url, LOCKS))
    message = str(raised.value)
    assert named in message
    assert message.startswith(f"{pg_url}: is not an agentevals history as it stands: the schema {H} holds ")
    assert "remove what is named" in message
    with psycopg.connect(pg_url.url) as conn:  # nothing was written, nothing rewritten
        assert conn.execute(f"SELECT outcome FROM ONLY {H}.attempts").fetchall() == [("failed",)]


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        pytest.param(
            FORGIVE + f"ALTER TABLE {L}.leases ADD CONSTRAINT fine CHECK (forgive())",
            "a constraint 'fine' on leases (CHECK (public.forgive()); remove it: "
            f"ALTER TABLE {L}.leases DROP CONSTRAINT fine)",
            id="check-resets-spending",
        ),
        pytest.param(
            FORGIVE + f"ALTER TABLE {L}.leases ADD COLUMN amnesty boolean;"
            f"ALTER TABLE {L}.leases ALTER COLUMN amnesty SET DEFAULT forgive()",
            "a column 'leases.amnesty' (boolean DEFAULT public.forgive();",
            id="default-resets-spending",
        ),
        pytest.param(
            f"ALTER TABLE {L}.days ALTER COLUMN tripped_run SET DEFAULT pg_sleep(30)::text",
            "a column 'days.tripped_run' defined as 'text DEFAULT (pg_sleep((30)::double precision))::text'",
            id="default-sleeps",
        ),
    ],
)
def test_a_ledger_schema_that_could_reset_spending_refuses_the_run(
    pg_url: DatabaseURL, tmp_path: Path, sql: str, named: str
) -> None:
    from pytest_agentevals.sim import Reply, SimServer

    from .guard_support import chat

    PostgresLedger(pg_url).state()  # the ledger's schema, as a first run makes it
    with psycopg.connect(pg_url.url, autocommit=True) as conn:
        conn.execute(sql)
    path = tmp_path / "run.trace.jsonl"
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        import anthropic

        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        # A $0.002 day: refused before its first call.
        with (
            pytest.raises(LedgerError) as raised,
            ae.Recorder(path, guards=[DailyBudget(0.002, quick(pg_url, LOCKS))]),
        ):
            chat(client, 20)
    message = str(raised.value)
    assert named in message
    assert "the run is refused (fail closed)" in message
    assert kinds(events_of(path)) == ["run_start", "guard", "run_end"]
    with psycopg.connect(pg_url.url) as conn:
        assert conn.execute(f"SELECT count(*) FROM {L}.leases").fetchone() == (0,)  # no lease taken


def test_a_function_shadowing_pg_catalog_through_the_databases_search_path_is_never_called(
    pg_url: DatabaseURL,
) -> None:
    database = pg_url.url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url.url, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION public.pg_backend_pid() RETURNS integer LANGUAGE sql AS 'SELECT 1'")
        conn.execute(f'ALTER DATABASE "{database}" SET search_path = public, pg_catalog')
    ledger = PostgresLedger(pg_url)
    assert ledger.start_run("r", 1.0) is None
    ledger.hold("r", [], 0.0, 0.01, 0.05, 1.0)
    assert ledger._conn is not None
    real = ledger._conn.info.backend_pid
    with psycopg.connect(pg_url.url) as conn:
        assert conn.execute(f"SELECT backend FROM {L}.holdings").fetchall() == [(real,)]
    ledger.close()


def test_flaky_report_against_a_stalled_server_ends_naming_the_timeout(
    stalled: FakeServer, tmp_path: Path
) -> None:
    from .conftest import run_agentevals

    url = stalled.url("s3cr%2Ft%40pw%3Ax")
    done = run_agentevals(
        "flaky",
        "report",
        "--db-timeouts",
        "connect=2,statement=0.5",
        "--history",
        url,
        cwd=tmp_path,
        bare_env=True,
    )
    assert done.returncode != 0
    assert "the history database timed out: the server stopped answering" in done.stderr
    assert "statement = 0.5 s in [tool.agentevals.db_timeouts]" in done.stderr
    assert "s3cr" not in done.stdout + done.stderr
