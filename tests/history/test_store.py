"""The history stores: atomic writes and idempotent ingest on every backend (SQLite, PostgreSQL,
in memory: `backend`), and broken SQLite files named, never lost."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pytest_agentevals.errors import HistoryError
from pytest_agentevals.history import open_store
from pytest_agentevals.history.model import JUNIT, PYTEST, Attempt, Source
from pytest_agentevals.history.sqlite import SCHEMA_VERSION, SQLiteStore
from tests.history.conftest import Opener


def _source(key: str = "pytest:s1", sha: str | None = "c1", run_id: str = "r1") -> Source:
    return Source(key=key, kind=PYTEST if key.startswith("pytest") else JUNIT, run_id=run_id, sha=sha)


def _attempt(
    test: str = "t.py::a", outcome: str = "passed", number: int = 1, layer: str | None = "step"
) -> Attempt:
    return Attempt(test, layer, "", number, outcome, 0.5, "main")


def test_attempts_round_trip_with_their_commit_and_run(backend: Opener) -> None:
    store = backend()
    assert store.append(_source(), [_attempt(), _attempt("t.py::b", "failed", layer=None)]) == 2
    assert store.append(_source(), [_attempt("t.py::b", "passed", 2, layer=None)]) == 1  # same source
    rows = list(store.attempts())
    assert [(r.test_id, r.layer, r.sha, r.run_id, r.attempt, r.outcome, r.worker) for r in rows] == [
        ("t.py::a", "step", "c1", "r1", 1, "passed", "main"),
        ("t.py::b", None, "c1", "r1", 1, "failed", "main"),
        ("t.py::b", None, "c1", "r1", 2, "passed", "main"),
    ]
    counts = {(c.test_id, c.sha): (c.passes, c.failures) for c in store.verdict_counts()}
    assert counts == {("t.py::a", "c1"): (1, 0), ("t.py::b", "c1"): (1, 1)}
    assert store.failing_finals() == []  # t.py::b failed, then passed on its rerun
    assert store.flaky_keys() == {("t.py::b", "", "c1")}
    assert sorted((r.run_id, r.layer or "") for r in store.run_layers()) == [("r1", ""), ("r1", "step")]
    assert store.known_tests() == {"t.py::a": "step", "t.py::b": None}


def test_a_new_sqlite_history_gets_its_folder(tmp_path: Path) -> None:
    store = open_store(tmp_path / "deep" / "h.sqlite")  # the folder is created
    assert store.location == str(tmp_path / "deep" / "h.sqlite")
    store.close()


def test_verdict_counts_can_keep_only_the_most_recent_of_each_layer(backend: Opener) -> None:
    store = backend()
    for i in range(5):
        store.append(_source(f"pytest:s{i}", sha=f"c{i}"), [_attempt(layer="step"), _attempt(layer="replay")])
    everything = store.verdict_counts()
    assert [c.sha for c in everything if c.layer == "step"] == ["c4", "c3", "c2", "c1", "c0"]
    recent = store.verdict_counts(per_layer=2)
    assert sorted((c.layer, c.sha) for c in recent) == [
        ("replay", "c3"),
        ("replay", "c4"),
        ("step", "c3"),
        ("step", "c4"),
    ]


def test_the_file_is_wal_and_readable_by_plain_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    store = SQLiteStore(path)
    store.append(_source(), [_attempt()])
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT test_id, outcome FROM attempt_rows").fetchall() == [("t.py::a", "passed")]
    store.close()


def test_ingesting_a_source_twice_adds_nothing(backend: Opener) -> None:
    store = backend()
    assert store.ingest(_source("junit:abc"), [_attempt()]) is True
    assert store.ingest(_source("junit:abc"), [_attempt(), _attempt()]) is False
    assert len(list(store.attempts())) == 1
    # A second handle on the same store (another process, say) sees it too.
    other = backend()
    assert other.has_source("junit:abc")
    assert other.ingest(_source("junit:abc"), [_attempt()]) is False
    assert len(list(other.attempts())) == 1


def test_attempts_without_a_sha_are_kept_but_never_judged(backend: Opener) -> None:
    store = backend()
    store.append(_source(sha=None), [_attempt(), _attempt(outcome="failed", number=2)])
    assert store.unjudged_attempts() == 2
    assert store.verdict_counts() == []


def test_an_excluded_source_is_kept_and_says_why(backend: Opener) -> None:
    store = backend()
    store.append(_source(), [_attempt(outcome="failed")])
    store.append(_source("pytest:s2", run_id="r2"), [_attempt(outcome="failed"), _attempt(number=2)])
    store.exclude("pytest:s1", "an outage")
    assert [(c.passes, c.failures) for c in store.verdict_counts()] == [(1, 1)]
    assert [(s.key, s.reason) for s in store.excluded_sources()] == [("pytest:s1", "an outage")]
    assert len(list(store.attempts())) == 3
    assert store.failing_finals() == []  # r2's test failed, then passed


def test_a_failed_write_rolls_back_whole_and_keeps_what_was_stored(backend: Opener) -> None:
    store = backend()
    store.append(_source(), [_attempt()])
    with pytest.raises(HistoryError, match="cannot write to the history"):
        store.append(_source("pytest:s2"), [_attempt("t.py::new"), _attempt(outcome="exploded")])
    assert [r.test_id for r in store.attempts()] == ["t.py::a"]
    assert not store.has_source("pytest:s2")
    # The store still works, and the test rolled back with the batch is not remembered wrongly.
    store.append(_source("pytest:s3"), [_attempt("t.py::new")])
    assert [r.test_id for r in store.attempts()] == ["t.py::a", "t.py::new"]
    assert backend().known_tests() == {"t.py::a": "step", "t.py::new": "step"}


def test_a_failing_final_is_the_last_attempt_of_a_run(backend: Opener) -> None:
    store = backend()
    store.append(_source(), [_attempt("t.py::a", "passed"), _attempt("t.py::a", "failed", 2)])
    store.append(_source("pytest:s2", run_id="r2"), [_attempt("t.py::a", "failed")])
    store.append(_source("pytest:s3", run_id="r2"), [_attempt("t.py::a", "passed", 2)])
    finals = store.failing_finals()
    assert [(f.run_id, f.test_id, f.outcome, f.sha) for f in finals] == [("r1", "t.py::a", "failed", "c1")]


def test_a_corrupt_file_is_one_clear_error_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    garbage = b"this is not a database, it is a shopping list\n" * 100
    path.write_bytes(garbage)
    with pytest.raises(HistoryError) as excinfo:
        SQLiteStore(path)
    message = str(excinfo.value)
    assert str(path) in message
    assert "file is not a database" in message
    assert "move the file aside" in message
    assert "--agentevals-history" in message
    assert path.read_bytes() == garbage  # never modified, never deleted
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.sqlite"]


def test_another_programs_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE recipes (name TEXT)")
    with pytest.raises(HistoryError, match="not an agentevals history"):
        SQLiteStore(path)
    with sqlite3.connect(path) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["recipes"]


def test_a_newer_schema_asks_for_an_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(HistoryError, match="newer pytest-agentevals"):
        SQLiteStore(path)


def test_a_directory_in_the_way_is_named(tmp_path: Path) -> None:
    (tmp_path / "h.sqlite").mkdir()
    with pytest.raises(HistoryError, match=r"h\.sqlite: cannot open"):
        SQLiteStore(tmp_path / "h.sqlite")


def _damage_page_of(path: Path, name: str) -> None:
    """Overwrite the root page of one table or index of an SQLite file with garbage."""
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    conn.close()
    with path.open("r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(b"\xde\xad\xbe\xef" * (page_size // 4))


def test_a_damaged_page_is_found_on_open_and_named(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    store = SQLiteStore(path)
    store.append(_source(), [_attempt(f"t.py::test_{i}") for i in range(50)])
    store.close()
    # The index behind UNIQUE (test_id, variant, layer): no report query reads it.
    _damage_page_of(path, "sqlite_autoindex_tests_1")
    damaged = path.read_bytes()
    with pytest.raises(HistoryError) as excinfo:
        SQLiteStore(path)
    message = str(excinfo.value)
    assert message.startswith(f"{path}: the history database is damaged (")
    assert f"sqlite3 {path} .recover" in message
    assert f"mv {path} {path}.broken" in message
    assert path.read_bytes() == damaged  # left as it was


def test_an_empty_file_is_not_a_history(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    path.touch()
    with pytest.raises(
        HistoryError, match=r"h\.sqlite: is an empty file, and an empty file is not a history"
    ):
        SQLiteStore(path)
    assert path.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.sqlite"]


def test_a_new_history_appears_whole(tmp_path: Path) -> None:
    path = tmp_path / "new" / "h.sqlite"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert tables == {"sources", "tests", "attempts"}
    assert not [p.name for p in path.parent.iterdir() if p.name.endswith(".new")]  # no scratch left
    SQLiteStore(path).close()  # and it opens again: what our own code made is never refused
