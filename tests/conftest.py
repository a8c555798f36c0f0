"""Fixtures shared by the project's own tests."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import pytest_agentevals
from pytest_agentevals.settings.dburl import DatabaseURL
from tests.pg_support import PgServer, server_session

REPO = Path(__file__).resolve().parent.parent

# Bytecode caches, as a developer's machine keeps them, for this process, its xdist workers and every
# pytest or agentevals process the suite starts: with PYTHONDONTWRITEBYTECODE set (as on this CI
# image) each of those hundreds of processes compiled the package, and pytest rewrote the asserts of
# every test module it imported, again from source. The benchmarks do the same for their sessions.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture(scope="session", autouse=True)
def _load_every_module() -> None:
    """Import every module of the package once, for the whole suite, before its first test.

    The suite's in-process pytester runs drop the modules each run imported (pytester snapshots
    sys.modules). With the engines loading lazily, every run would import them anew — seconds over
    the suite — and import libyaml's C extension anew, whose node classes outlive a re-import.
    Imported here, they stay across runs, as they stay in a user's one session. Lazy loading itself
    is checked in fresh processes (tests/repo/test_imports.py). A fixture, not a conftest import:
    the suite's own `pytest --co` subprocesses load this conftest and need none of it (the SDK
    alone costs them seconds).
    """
    for module in pkgutil.walk_packages(pytest_agentevals.__path__, "pytest_agentevals."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)


def make_fake_key(label: str = "test") -> str:
    """An Anthropic-shaped key that is obviously fake, built at run time so no key-shaped literal
    sits in the repo."""
    return "sk-ant-" + "api03-" + f"fake{label}" + "Q" * 40


@pytest.fixture
def fake_api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fake key, also exported as ANTHROPIC_API_KEY the way a user's shell would."""
    key = make_fake_key()
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    return key


@pytest.fixture
def repo_root() -> Path:
    return REPO


def run_agentevals(
    *args: str | Path, cwd: Path, env: Mapping[str, str] | None = None, bare_env: bool = False
) -> subprocess.CompletedProcess[str]:
    """The agentevals command as a user runs it, in a subprocess.

    A developer's real ANTHROPIC_* variables never reach it; `bare_env` leaves only PATH and a HOME
    in `cwd` (no CI variables, no git identity), for tests that must not see the CI they run in.
    """
    if bare_env:
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd)}
    else:
        base = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest_agentevals", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, **(env or {})},
        check=False,
    )


def empty_cassette(root: Path, name: str = "empty") -> str:
    """A recorded run with no calls at `root/cassettes/NAME.trace.jsonl`, for a replay-layer test that
    needs its marker but not a recording (a marked test always replays); returns NAME."""
    start = {
        "type": "run_start",
        "v": 1,
        "run_id": name,
        "agent": "a",
        "started_at": "2026-01-01",
        "contract": {},
    }
    end = {"type": "run_end", "seq": 1, "t": 0.0, "status": "ok", "totals": {}}
    path = root / "cassettes" / f"{name}.trace.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(start) + "\n" + json.dumps(end) + "\n")
    return name


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL server for the session (tests/pg_support.py): skipped with its reason where
    the machine has none, failing under CI."""
    yield from server_session()


@pytest.fixture
def pg_url(pg_server: PgServer) -> DatabaseURL:
    """A fresh, empty database on the session's server."""
    return DatabaseURL(pg_server.new_database())
