"""The shared history as CI uses it: pytest recording into PostgreSQL, `agentevals flaky` reading it
from $AGENTEVALS_HISTORY, and `flaky migrate` copying an SQLite history in (twice: once)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentevals.history import ci_env
from pytest_agentevals.history.postgres import PostgresStore
from pytest_agentevals.history.sqlite import SQLiteStore
from pytest_agentevals.settings.dburl import DatabaseURL

from ..conftest import run_agentevals
from .test_junit import _seed


@pytest.fixture(autouse=True)
def _no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag, _read in ci_env.PROVIDERS:
        monkeypatch.delenv(flag, raising=False)


def test_a_pytest_session_records_into_the_server(pytester: pytest.Pytester, pg_url: DatabaseURL) -> None:
    pytester.makepyfile(
        test_agent="""
        import pytest

        @pytest.mark.step
        def test_one():
            pass

        def test_two():
            assert False
        """
    )
    result = pytester.runpytest("--agentevals-sha=c1", f"--agentevals-history={pg_url.url}")
    result.assert_outcomes(passed=1, failed=1)
    assert pg_url.url not in result.stdout.str()  # the password is never printed
    store = PostgresStore(pg_url)
    assert sorted((r.test_id, r.layer, r.outcome, r.sha) for r in store.attempts()) == [
        ("test_agent.py::test_one", "step", "passed", "c1"),
        ("test_agent.py::test_two", None, "failed", "c1"),
    ]
    store.close()


def test_migrate_copies_an_sqlite_history_once_and_the_verdicts_agree(
    tmp_path: Path, pg_url: DatabaseURL
) -> None:
    history = tmp_path / "h.sqlite"
    _seed(history, "step", 5, 1)
    _seed(history, "marathon", 40, 2)
    sqlite = SQLiteStore(history)
    sqlite.exclude("pytest:step4", "an outage")
    sqlite.close()
    env = {"AGENTEVALS_HISTORY": pg_url.url}
    first = run_agentevals("flaky", "migrate", "--history", "h.sqlite", cwd=tmp_path, bare_env=True, env=env)
    assert first.returncode == 0, first.stderr
    assert "45 source(s) with 48 attempt(s) copied, 0 already there" in first.stdout
    assert str(pg_url) in first.stdout
    again = run_agentevals("flaky", "migrate", "--output", pg_url.url, "--history", "h.sqlite", cwd=tmp_path)
    assert "0 source(s) with 0 attempt(s) copied, 45 already there" in again.stdout
    # `flaky check` and `report` read the shared history from the environment: the same verdicts.
    shared = run_agentevals("flaky", "report", "--format", "json", cwd=tmp_path, bare_env=True, env=env)
    local = run_agentevals("flaky", "report", "--format", "json", "--history", "h.sqlite", cwd=tmp_path)
    assert shared.returncode == 0, shared.stderr
    shared_report, local_report = json.loads(shared.stdout), json.loads(local.stdout)
    assert shared_report.pop("history") == str(pg_url)  # named, its password redacted
    local_report.pop("history")
    assert shared_report == local_report
    assert shared_report["not_judged"]["outage_runs"]  # the outage stayed excluded
    check = run_agentevals("flaky", "check", cwd=tmp_path, bare_env=True, env=env)
    assert check.returncode == 6, check.stdout + check.stderr
    assert pg_url.url not in first.stdout + again.stdout + shared.stdout + check.stdout + check.stderr


def test_migrate_without_a_url_says_how(tmp_path: Path) -> None:
    done = run_agentevals("flaky", "migrate", "--history", "h.sqlite", cwd=tmp_path, bare_env=True)
    assert done.returncode == 2
    assert "--output: is missing" in done.stderr
    assert "set $AGENTEVALS_HISTORY" in done.stderr
