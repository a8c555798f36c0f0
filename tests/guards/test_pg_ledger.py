"""The day ledger in PostgreSQL: one budget across "machines" (processes in their own folders), a
retried transaction counted once, a killed run's holding spent and shown, and fail closed."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import pytest_agentevals as ae
from pytest_agentevals import RunStopped
from pytest_agentevals.errors import LedgerError
from pytest_agentevals.guards import DailyBudget
from pytest_agentevals.guards.pg_ledger import SCHEMA, PostgresLedger
from pytest_agentevals.settings.dburl import DatabaseURL
from pytest_agentevals.sim import Reply, SimServer

from ..guard_support import chat, events_of, guard_events, kinds
from ..pg_support import NO_POSTGRES, PgServer

if os.environ.get("CI"):
    import psycopg  # CI installs the test extra: a missing driver fails here
else:  # elsewhere these skip, saying why
    psycopg = pytest.importorskip("psycopg", reason=NO_POSTGRES)

LIMIT = 0.01


def day_row(url: DatabaseURL) -> dict[str, Any]:
    with psycopg.connect(url.url) as conn:
        cur = conn.execute(f"SELECT * FROM {SCHEMA}.days WHERE day = %s", (dt.date.today(),))
        row = cur.fetchone()
        assert row is not None
        assert cur.description is not None
        return {column.name: value for column, value in zip(cur.description, row, strict=True)}


# A "machine": its own folder, its own process, the day's budget through the real guard, with calls
# of a fixed price and a real cost a little below it (so settling gives some of each lease back).
MACHINE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from types import SimpleNamespace
    from pytest_agentevals.guards import DailyBudget
    from pytest_agentevals.guards.protocol import Call, CallResult
    from pytest_agentevals.settings.dburl import DatabaseURL

    url, limit, name, go = DatabaseURL(sys.argv[1]), float(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    guard = DailyBudget(limit, url)
    assert guard.start(SimpleNamespace(run_id=name)) is None
    Path(name + ".ready").touch()
    while not go.exists():
        time.sleep(0.005)
    spent = 0.0
    for index in range(1, 10_000):
        call = Call(index, "m", 10, 10, 0.0003, {})
        if guard.before_call(call) is not None:
            break
        guard.after_call(call, CallResult(200, {}, 0.00025))
        spent += 0.00025
    guard.end("budget_exhausted")
    print(repr(spent))
    """
)


def test_eight_machines_under_one_day_budget_never_pass_it(pg_url: DatabaseURL, tmp_path: Path) -> None:
    script = tmp_path / "machine.py"
    script.write_text(MACHINE)
    go = tmp_path / "go"
    folders = [tmp_path / f"machine-{n}" for n in range(8)]
    workers = []
    for folder in folders:
        folder.mkdir()
        workers.append(
            subprocess.Popen(
                [sys.executable, str(script), pg_url.url, str(LIMIT), folder.name, str(go)],
                cwd=folder,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    deadline = time.monotonic() + 90
    while not all((folder / f"{folder.name}.ready").exists() for folder in folders):
        assert time.monotonic() < deadline, "the machines did not start"
        assert all(worker.poll() is None for worker in workers), "a machine ended before it started"
        time.sleep(0.02)
    go.touch()
    spent = [float(worker.communicate(timeout=120)[0]) for worker in workers]
    assert [worker.returncode for worker in workers] == [0] * 8
    assert sum(1 for amount in spent if amount > 0) >= 2  # they really spent side by side
    day = day_row(pg_url)
    # Every cent in the ledger is a cent a machine spent, once; the day never went past its limit.
    assert day["spent_usd"] == pytest.approx(sum(spent), abs=1e-9)
    assert day["spent_usd"] <= LIMIT
    assert day["calls"] == round(sum(spent) / 0.00025)
    assert day["runs"] == 8
    assert day["tripped_limit"] == LIMIT
    assert day["reserved_usd"] == pytest.approx(0.0, abs=1e-12)  # every run gave its lease back
    assert PostgresLedger(pg_url).start_run("ninth", LIMIT) is not None  # the breaker holds for all


def test_a_retried_transaction_counts_once(pg_url: DatabaseURL) -> None:
    ledger = PostgresLedger(pg_url)
    assert ledger.start_run("r", 1.0) is None
    today = ledger.today()
    state, granted = ledger.hold("r", [(today, 0.1)], 0.0, 0.01, 0.05, 1.0)
    assert granted == pytest.approx(0.05)
    assert state.spent_usd == pytest.approx(0.1)
    ledger._lease -= 1  # the same lease again, as after a commit whose answer was lost
    again, granted_again = ledger.hold("r", [(today, 0.1)], 0.0, 0.01, 0.05, 1.0)
    assert (again.spent_usd, granted_again) == (state.spent_usd, granted)
    assert day_row(pg_url)["spent_usd"] == pytest.approx(0.1)  # not 0.2
    assert day_row(pg_url)["calls"] == 1
    # A dropped connection is reconnected once: the transaction still counts once.
    assert ledger._conn is not None
    with psycopg.connect(pg_url.url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (ledger._conn.info.backend_pid,))
    ledger.finish("r", [(today, 0.2)])
    assert day_row(pg_url)["spent_usd"] == pytest.approx(0.3 + 0.05)  # the lost backend's lease: spent
    assert day_row(pg_url)["reaped_usd"] == pytest.approx(0.05)


def test_a_killed_runs_holding_is_spent_and_shown(pg_url: DatabaseURL, tmp_path: Path) -> None:
    code = (
        "import os, sys\n"
        "from pytest_agentevals.guards.pg_ledger import PostgresLedger\n"
        "from pytest_agentevals.settings.dburl import DatabaseURL\n"
        "ledger = PostgresLedger(DatabaseURL(sys.argv[1]))\n"
        "ledger.start_run('doomed', 1.0)\n"
        "ledger.hold('doomed', [], 0.0, 0.25, 0.25, 1.0)\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    doomed = subprocess.Popen(
        [sys.executable, "-c", code, pg_url.url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert doomed.stdout is not None
    assert doomed.stdout.readline().strip() == "held"
    other = PostgresLedger(pg_url)
    assert other.state().reserved_usd == pytest.approx(0.25)  # alive: held, not spent
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(timeout=10)
    deadline = time.monotonic() + 10
    while other.state().reserved_usd > 0:  # the server notices the connection is gone
        assert time.monotonic() < deadline
        time.sleep(0.05)
    day = day_row(pg_url)
    assert (day["spent_usd"], day["reaped_usd"]) == (pytest.approx(0.25), pytest.approx(0.25))
    other.close()


def test_an_unreachable_ledger_refuses_the_run_or_lets_it_run_when_told(
    pg_server: PgServer, tmp_path: Path
) -> None:
    url = DatabaseURL(pg_server.url("nowhere", password="s3cret-pw").replace(str(pg_server.port), "1"))
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        import anthropic

        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        path = tmp_path / "closed.trace.jsonl"
        with pytest.raises(LedgerError) as raised:
            ae.Recorder(path, guards=[DailyBudget(LIMIT, url)]).start()
        message = str(raised.value)
        assert "s3cret-pw" not in message
        assert "agentevals:***@127.0.0.1:1/nowhere" in message
        assert "cannot connect to the day ledger database" in message
        assert "start the server, or fix the host and port" in message
        assert kinds(events_of(path)) == ["run_start", "guard", "run_end"]  # no call left
        assert "s3cret-pw" not in path.read_text()

        opened = tmp_path / "open.trace.jsonl"
        with ae.Recorder(opened, guards=[DailyBudget(LIMIT, url, unreachable="run")]):
            chat(client, 3)
        warning = guard_events(events_of(opened))[0]
        assert warning["action"] == "warn"
        assert "not counted against" in warning["reason"]
        assert events_of(opened)[-1]["status"] == "ok"


def test_a_run_stopped_by_a_database_ledger_says_where(pg_url: DatabaseURL, tmp_path: Path) -> None:
    path = tmp_path / "run.trace.jsonl"
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        import anthropic

        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        with pytest.raises(RunStopped), ae.Recorder(path, guards=[DailyBudget(0.002, pg_url)]):
            chat(client, 200)
    stop = guard_events(events_of(path))[-1]
    assert stop["ledger"] == str(pg_url)
    assert "***" in stop["ledger"]
    assert day_row(pg_url)["spent_usd"] == pytest.approx(float(ae.read_trace(path)[-1]["totals"]["cost_usd"]))


@pytest.mark.parametrize(
    ("sql", "found"),
    [
        (
            f"CREATE FUNCTION {SCHEMA}.f() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';"
            f"CREATE TRIGGER sneaky BEFORE UPDATE ON {SCHEMA}.days "
            f"FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.f()",
            "a function agentevals_ledger.f() (in the schema; remove it: DROP ROUTINE "
            "agentevals_ledger.f()); a trigger 'sneaky' on days",
        ),
        (f"CREATE VIEW {SCHEMA}.lies AS SELECT 1 AS x", "a view 'lies'"),
        (f"UPDATE {SCHEMA}.meta SET value = '99'", "newer pytest-agentevals (schema 99"),
    ],
    ids=["trigger", "view", "newer"],
)
def test_a_ledger_schema_not_ours_is_refused_before_anything_is_written(
    pg_url: DatabaseURL, sql: str, found: str
) -> None:
    assert PostgresLedger(pg_url).start_run("first", 1.0) is None  # creates the schema, counts a run
    with psycopg.connect(pg_url.url, autocommit=True) as conn:
        conn.execute(sql)
    ledger = PostgresLedger(pg_url)
    with pytest.raises(LedgerError) as raised:
        ledger.start_run("r", 1.0)
    assert found in str(raised.value)
    assert str(pg_url) in str(raised.value)
    with psycopg.connect(pg_url.url) as conn:
        assert conn.execute(f"SELECT count(*), sum(runs) FROM {SCHEMA}.days").fetchone() == (1, 1)


def test_guards_for_a_url_setting_use_the_database(pg_url: DatabaseURL, tmp_path: Path) -> None:
    from pytest_agentevals.settings import Settings

    settings = Settings.resolve(tmp_path, environ={"AGENTEVALS_LEDGER": pg_url.url})
    assert settings.ledger == pg_url
    assert settings.sources["ledger"] == "env"
    guards = ae.guards.guards_for(ae.Budget(max_daily_cost_usd=1.0), ledger=settings.ledger)
    (daily,) = guards
    assert isinstance(daily, DailyBudget)
    assert isinstance(daily.ledger, PostgresLedger)
    assert daily.start(SimpleNamespace(run_id="x")) is None  # type: ignore[arg-type]
    daily.end("completed")
    assert day_row(pg_url)["runs"] == 1
