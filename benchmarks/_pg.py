"""A PostgreSQL server for the benchmarks: $AGENTEVALS_BENCH_URL when set (a server of your own, its
database emptied of our schemas first), else one started for the run exactly as the tests start
theirs (tests/pg_support.py: initdb/pg_ctl into a temporary folder, on loopback), but with fsync on,
as a real server runs, so the figures do not flatter the database."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.pg_support

from pytest_agentevals.settings.dburl import DatabaseURL


@contextlib.contextmanager
def server() -> Iterator[Callable[[], DatabaseURL]]:
    """Yields a function making a fresh, empty database (its URL) on the server."""
    given = os.environ.get("AGENTEVALS_BENCH_URL", "").strip()
    if given:
        import psycopg

        def reuse() -> DatabaseURL:
            with psycopg.connect(given, autocommit=True) as conn:
                for schema in ("agentevals_history", "agentevals_ledger"):
                    conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            return DatabaseURL(given)

        yield reuse
        return
    from tests.pg_support import start_server, unavailable

    why = unavailable()
    if why is not None:
        raise SystemExit(f"no PostgreSQL for the benchmark: {why} (or set AGENTEVALS_BENCH_URL)")
    started = start_server(durable=True)  # fsync on, as a team's server runs
    try:
        yield lambda: DatabaseURL(started.new_database("bench"))
    finally:
        started.stop()
        shutil.rmtree(started.folder, ignore_errors=True)
