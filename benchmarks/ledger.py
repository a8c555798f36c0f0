"""The day ledger: the JSON file under flock beside PostgreSQL.

    python benchmarks/ledger.py [--quick]

In one process, side by side:

- reserve + reconcile per call, the worst case: one ledger transaction per call (each settles the
  call before and takes a lease for the next), 300 calls, file vs database (`seconds_per_call_*`,
  `per_call_ratio`);
- a 300-step streamed run of the example agent against the simulated server under
  `max_daily_cost_usd` only, without the guard, with the file ledger and with the database ledger,
  alternating, medians of wall time (each database ledger's schema made beforehand: a team's server
  migrates once, not per run; connecting is counted). Two limits: one far away (the run takes one
  lease, at its start), and one a few times the run's own cost, so the lease (a fiftieth of the
  limit) runs out and is renewed every few calls. `db_overhead` is the database run's time over
  the unguarded one's, less one (aim: <= 0.05); `db_over_file` compares the two ledgers.

The server: $AGENTEVALS_BENCH_URL, else one started for the run on loopback (benchmarks/_pg.py).
Prints one JSON line per figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import _figures as figures  # benchmarks/: the folder of the script run
import _pg  # also puts the repository root on sys.path: the examples package

from examples.taskrunner import run
from pytest_agentevals import Budget, Recorder, read_trace
from pytest_agentevals.guards import guards_for
from pytest_agentevals.guards.ledger import DayLedger, Ledger
from pytest_agentevals.guards.pg_ledger import PostgresLedger
from pytest_agentevals.settings.dburl import DatabaseURL

TASKS = 130
STEPS = 300
CALLS = 300
emit = partial(figures.emit, "ledger")


def per_call(ledger: DayLedger) -> float:
    """Seconds per call when every call is one ledger transaction."""
    ledger.start_run("bench", 1e9)
    today = ledger.today()
    started = time.perf_counter()
    for _ in range(CALLS):
        ledger.hold("bench", [(today, 0.0004)], 0.0, 0.0005, 0.0005, 1e9)
    seconds = time.perf_counter() - started
    ledger.finish("bench", [])
    return seconds / CALLS


def migrated(url: DatabaseURL) -> DatabaseURL:
    """A database whose ledger schema exists already, as a team's does after its first run ever: the
    one-off migration (a few fsynced CREATEs) is not a cost of every run."""
    ledger = PostgresLedger(url)
    ledger.state()
    ledger.close()
    return url


def once(trace: Path, limit: float | None, ledger: Path | DatabaseURL | None) -> float:
    guards = guards_for(Budget(max_daily_cost_usd=limit), ledger=ledger) if limit is not None else []
    started = time.perf_counter()
    with Recorder(trace, agent="taskrunner", seed=1, guards=guards):
        result = run(TASKS, seed=1, stream=True, max_steps=STEPS)
    elapsed = time.perf_counter() - started
    if result.steps != STEPS:
        raise SystemExit(f"the run took {result.steps} steps, not {STEPS}: not comparing like runs")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeats = 2 if args.quick else 5
    with tempfile.TemporaryDirectory() as folder, _pg.server() as fresh:
        root = Path(folder)
        file_call = min(per_call(Ledger(root / f"calls-{n}.json")) for n in range(2))
        db_call = min(per_call(PostgresLedger(migrated(fresh()))) for _ in range(2))
        emit(f"{CALLS} calls, a transaction each", "seconds_per_call_file", file_call, digits=6)
        emit(f"{CALLS} calls, a transaction each", "seconds_per_call_postgresql", db_call, digits=6)
        emit(f"{CALLS} calls, a transaction each", "per_call_ratio", db_call / file_call)

        once(root / "warm.trace.jsonl", None, None)  # imports, the SDK, the file system
        cost = float(read_trace(root / "warm.trace.jsonl")[-1]["totals"]["cost_usd"])
        for label, limit in (("far limit", 1e6), ("lease renewed every few calls", cost * 5)):
            db = fresh()
            once(root / "warm-db.trace.jsonl", limit * 1000, db)
            off, on_file, on_db = [], [], []
            for index in range(repeats):
                # Alternate, so drift in the machine's load falls on every side alike. A fresh
                # ledger per run, so no run is refused by an earlier one's spending.
                off.append(once(root / f"off-{index}.trace.jsonl", None, None))
                on_file.append(
                    once(root / f"file-{index}.trace.jsonl", limit, root / f"l-{label}-{index}.json")
                )
                on_db.append(once(root / f"db-{index}.trace.jsonl", limit, migrated(fresh())))
            case = f"{STEPS} steps, max_daily_cost_usd, {label}"
            seconds = {
                name: statistics.median(runs)
                for name, runs in (("off", off), ("file", on_file), ("db", on_db))
            }
            emit(case, "seconds_unguarded", seconds["off"])
            emit(case, "seconds_file_ledger", seconds["file"])
            emit(case, "seconds_postgresql_ledger", seconds["db"])
            emit(case, "file_overhead", seconds["file"] / seconds["off"] - 1)
            emit(case, "db_overhead", seconds["db"] / seconds["off"] - 1)
            emit(case, "db_over_file", seconds["db"] / seconds["file"])


if __name__ == "__main__":
    sys.exit(main())
