"""How long a run under a PostgreSQL day ledger takes to fail closed on a server gone bad.

    python benchmarks/pg_stall.py [--quick]

Against a fake server on loopback (tests/pg_support.py `FakeServer`): one that completes the login
and then never answers a query (the ledger's first statement never comes back), and one that accepts
the connection and never says a word. For each, the wall time from `Recorder.start()` to the
`LedgerError` that refuses the run, beside the timeout that should bound it: the statement timeout
plus the client's grace, or the connect timeout. Cases: the defaults, and short timeouts (`--quick`
runs only those). Prints one JSON line per figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import _figures as figures  # benchmarks/: the folder of the script run
import _pg  # noqa: F401 - puts the repository root on sys.path: tests.pg_support

from pytest_agentevals import Recorder
from pytest_agentevals.errors import LedgerError
from pytest_agentevals.guards import DailyBudget
from pytest_agentevals.pg import GRACE
from pytest_agentevals.settings.dburl import DatabaseURL, DbTimeouts
from tests.pg_support import FakeServer


def refused_after(server: FakeServer, timeouts: DbTimeouts, folder: Path) -> float:
    url = dataclasses.replace(DatabaseURL(server.url("s3cr%2Ft")), timeouts=timeouts)
    started = time.perf_counter()
    try:
        Recorder(folder / "run.trace.jsonl", guards=[DailyBudget(0.01, url)]).start()
    except LedgerError:
        return time.perf_counter() - started
    raise SystemExit("the run was not refused")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the short timeouts only")
    quick = parser.parse_args(argv).quick
    cases = [("short", DbTimeouts(connect=2, statement=2.0))]
    if not quick:
        cases.append(("defaults", DbTimeouts()))
    with tempfile.TemporaryDirectory() as tmp:
        for name, timeouts in cases:
            for login, bound, what in (
                (True, timeouts.statement + GRACE, "stalled_after_login"),
                (False, float(timeouts.connect), "silent_connect"),
            ):
                server = FakeServer(login=login)
                try:
                    took = refused_after(server, timeouts, Path(tmp))
                finally:
                    server.close()
                figures.emit("pg_stall", f"{what}:{name}", "seconds_to_fail_closed", took, bound=bound)
                figures.emit("pg_stall", f"{what}:{name}", "over_bound_ratio", took / bound, bound=bound)


if __name__ == "__main__":
    main(sys.argv[1:])
