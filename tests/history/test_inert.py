"""The history database is data: a file holding anything beyond our schema is refused before any
read or write, and never through a symbolic link (issue 17)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from pytest_agentevals.errors import HistoryError
from pytest_agentevals.history.model import PYTEST, Attempt, Source
from pytest_agentevals.history.sqlite import SQLiteStore

pytest_plugins = ["pytester"]

# One crafted object per case, each added to a real history: what it would do if it ran.
HOSTILE = {
    # Hangs every session and `flaky ingest`: each insert counts an endless sequence.
    "hang": (
        "trigger",
        "CREATE TRIGGER hang AFTER INSERT ON attempts BEGIN "
        "SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
        "SELECT x FROM c); END",
    ),
    # Rewrites every stored failure as a pass: the flakiness verdicts lie from then on.
    "launder": (
        "trigger",
        "CREATE TRIGGER launder AFTER INSERT ON attempts BEGIN "
        "UPDATE attempts SET outcome = 'passed' WHERE id = new.id; END",
    ),
    "extra_view": ("view", "CREATE VIEW extra_view AS SELECT * FROM attempts"),
    "shadow": ("virtual table", "CREATE VIRTUAL TABLE shadow USING fts5(text)"),
    "by_outcome": ("index", "CREATE INDEX by_outcome ON attempts (outcome)"),
}


def _history(tmp_path: Path) -> Path:
    path = tmp_path / "history.sqlite"
    SQLiteStore(path).close()
    return path


def _failure() -> tuple[Source, list[Attempt]]:
    return Source("pytest:s1", PYTEST, "r1", "c1"), [Attempt("t.py::a", "step", "", 1, "failed", 0.1, "")]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_history_holding_code_is_refused_before_any_read_or_write(tmp_path: Path, name: str) -> None:
    path = _history(tmp_path)
    kind, sql = HOSTILE[name]
    with sqlite3.connect(path) as conn:
        conn.execute(sql)
    conn.close()
    before = path.read_bytes()
    listing = sorted(os.listdir(tmp_path))

    def open_and_record() -> None:
        SQLiteStore(path).append(*_failure())  # before the fix: hangs, or stores a pass

    with pytest.raises(HistoryError) as excinfo:
        open_and_record()
    message = str(excinfo.value)
    assert f"{kind} {name!r}" in message
    assert str(path) in message
    assert "move the file aside" in message
    assert path.read_bytes() == before  # nothing recorded is lost, nothing was written
    assert sorted(os.listdir(tmp_path)) == listing


def test_a_rewritten_view_of_ours_is_refused(tmp_path: Path) -> None:
    path = _history(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP VIEW attempt_rows")
        conn.execute(
            "CREATE VIEW attempt_rows AS SELECT a.id, t.test_id, t.layer, t.variant, s.sha, s.branch, "
            "s.run_id, a.attempt, 'passed' AS outcome, a.duration, a.worker, s.key AS source, s.excluded "
            "FROM attempts a JOIN sources s ON s.id = a.source JOIN tests t ON t.id = a.test"
        )
    conn.close()
    with pytest.raises(HistoryError, match="view 'attempt_rows'"):
        SQLiteStore(path)


def test_our_own_history_and_sqlite_statistics_still_open(tmp_path: Path) -> None:
    path = _history(tmp_path)
    store = SQLiteStore(path)
    store.append(*_failure())
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("ANALYZE")  # sqlite_stat1: SQLite's own data, not code
    conn.close()
    store = SQLiteStore(path)
    assert [a.outcome for a in store.attempts()] == ["failed"]
    store.close()


@pytest.mark.parametrize("suffix", ["", "-wal"])
def test_a_history_that_is_a_link_is_refused(tmp_path: Path, suffix: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "elsewhere.sqlite"
    tree = tmp_path / "tree" / ".agentevals"
    tree.mkdir(parents=True)
    link = tree / f"history.sqlite{suffix}"
    link.symlink_to(target)
    with pytest.raises(HistoryError) as excinfo:
        SQLiteStore(tree / "history.sqlite")
    assert f"{link}: is a symbolic link" in str(excinfo.value)
    assert "replace the link with the real file" in str(excinfo.value)
    assert not target.exists()  # nothing created at the link's target
    assert os.listdir(outside) == []


def test_a_history_folder_that_is_a_link_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / ".agentevals").symlink_to(outside)
    monkeypatch.chdir(tree)  # the root: folders from here down are checked
    with pytest.raises(HistoryError, match=r"\.agentevals: is a symbolic link"):
        SQLiteStore(Path(".agentevals") / "history.sqlite")
    assert os.listdir(outside) == []


# -- through a real session and a real command ------------------------------------------------------

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="1" failures="1">
<testcase classname="t" name="test_a" time="0.1"><failure message="boom"/></testcase>
</testsuite></testsuites>
"""


@pytest.mark.parametrize("name", ["hang", "extra_view"])
def test_a_hostile_history_is_refused_by_a_session_and_by_flaky_ingest(
    pytester: pytest.Pytester, name: str
) -> None:
    """A committed `.agentevals/history.sqlite` holding a trigger that would hang every session, or a
    view: a real pytest session (a subprocess, so a hang would show as its timeout) and `agentevals
    flaky ingest` each say so once, naming the file; nothing is written and the file is kept."""
    from ..conftest import run_agentevals

    path = _history(pytester.mkdir(".agentevals"))
    kind, sql = HOSTILE[name]
    with sqlite3.connect(path) as conn:
        conn.execute(sql)
    conn.close()
    before = path.read_bytes()
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--agentevals-sha=c1", timeout=120)
    result.assert_outcomes(passed=1)
    out = result.stdout.str() + result.stderr.str()
    assert out.count("move the file aside") == 1, out
    (line,) = [line for line in out.splitlines() if "move the file aside" in line]
    assert str(path) in line
    assert f"{kind} {name!r}" in line
    assert "Traceback" not in out
    (pytester.path / "junit.xml").write_text(JUNIT)
    done = run_agentevals("flaky", "ingest", "junit.xml", "--sha", "c1", cwd=pytester.path)
    assert done.returncode != 0
    assert done.stderr.count("move the file aside") == 1, done.stderr
    assert str(path) in done.stderr
    assert f"{kind} {name!r}" in done.stderr
    assert "Traceback" not in done.stderr
    assert path.read_bytes() == before  # nothing written, nothing lost
    assert sorted(p.name for p in path.parent.iterdir()) == ["history.sqlite"]  # no -wal, no -journal
