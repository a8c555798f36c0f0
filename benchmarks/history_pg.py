"""The history in PostgreSQL beside SQLite: JUnit ingest, the verdict report, concurrent writers.

    python benchmarks/history_pg.py          # 1,000 files x 200 tests (200,000 attempts)
    python benchmarks/history_pg.py --quick  # 100 files x 200 tests

The same generated JUnit files as benchmarks/flaky.py (each a CI run of one of 250 commits). In one
process, side by side:

- ingest: every file through `Ingester` (read, hash, parse, map, store) into an SQLite file and into
  PostgreSQL, alternating chunk by chunk so a busy machine slows both alike (`ingest_ratio`, aim
  <= 2);
- the flakiness report (`analyze`, every verdict of every layer) over the resulting history, best of
  three each, alternating (`report_ratio`, aim <= 1.5);
- throughput: the same sources (parsed once, beforehand) stored by one writer process, then by eight
  concurrent ones into a fresh database (`concurrent_speedup`: eight writers' attempts per second
  over one's; on a machine with fewer cores than writers the server and the writers share them).

The server: $AGENTEVALS_BENCH_URL, else one started for the run on loopback (benchmarks/_pg.py).
Prints one JSON line per figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import _figures as figures  # benchmarks/: the folder of the script run
import _pg
from flaky import CHUNK, TESTS_PER_FILE, generate, timed

from pytest_agentevals.history.analysis import analyze
from pytest_agentevals.history.backends import open_store
from pytest_agentevals.history.ingest import Ingester
from pytest_agentevals.history.model import JUNIT, Attempt, Source
from pytest_agentevals.history.quarantine import Quarantine
from pytest_agentevals.history.store import HistoryStore
from pytest_agentevals.settings import Settings
from pytest_agentevals.settings.dburl import DatabaseURL

WRITERS = 8
emit = partial(figures.emit, "history_pg")


def _write(url: str, batches: list[tuple[Source, list[Attempt]]], start: object, done: object) -> None:
    store = open_store(DatabaseURL(url))
    start.wait()  # type: ignore[attr-defined]
    for source, attempts in batches:
        store.ingest(source, attempts)
    store.close()
    done.put(time.perf_counter())  # type: ignore[attr-defined]


def throughput(url: DatabaseURL, batches: list[tuple[Source, list[Attempt]]], writers: int) -> float:
    """Attempts per second of `writers` processes storing `batches` between them."""
    context = multiprocessing.get_context("fork")
    start, done = context.Event(), context.Queue()
    shares = [batches[n::writers] for n in range(writers)]
    processes = [context.Process(target=_write, args=(url.url, share, start, done)) for share in shares]
    for process in processes:
        process.start()
    time.sleep(1.0)  # every writer connected and migrated (or waiting on the lock): time the writes
    began = time.perf_counter()
    start.set()
    ended = max(done.get(timeout=600) for _ in processes)
    for process in processes:
        process.join()
    return sum(len(attempts) for _, attempts in batches) / (ended - began)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 files instead of 1,000")
    args = parser.parse_args(argv)
    files = 100 if args.quick else 1000
    case = f"{files} files x {TESTS_PER_FILE} tests"
    with tempfile.TemporaryDirectory(prefix="agentevals-bench-") as tmp, _pg.server() as fresh:
        root = Path(tmp)
        runs = generate(root / "results", files)
        stores: dict[str, HistoryStore] = {
            "sqlite": open_store(root / "h.sqlite"),
            "postgresql": open_store(fresh()),
        }
        ingesters = {name: Ingester(store, root) for name, store in stores.items()}

        def ingest(name: str, chunk: list[tuple[Path, str, str]]) -> int:
            ingester = ingesters[name]
            return sum(ingester.ingest([path], sha=sha, run_id=run).attempts for path, sha, run in chunk)

        seconds = {"sqlite": 0.0, "postgresql": 0.0}
        attempts = 0
        for start in range(0, files, CHUNK):
            chunk = runs[start : start + CHUNK]
            for name in seconds:
                spent, stored = timed(lambda name=name: ingest(name, chunk))  # type: ignore[misc]  # noqa: B023
                seconds[name] += spent
            attempts += stored

        budgets = Settings.resolve(root).flaky_budget
        today = dt.date.today()

        def report(store: HistoryStore) -> Callable[[], object]:
            return lambda: analyze(store, budgets, Quarantine(root / "q.yaml"), today)

        best = {"sqlite": float("inf"), "postgresql": float("inf")}
        for _ in range(3):
            for name, store in stores.items():
                best[name] = min(best[name], timed(report(store))[0])
        verdicts = {name: len(store.verdict_counts()) for name, store in stores.items()}
        if verdicts["sqlite"] != verdicts["postgresql"]:
            raise SystemExit(f"the two stores disagree: {verdicts}")
        # Throughput: the stored sources read back, so the writers time the store alone.
        grouped: dict[str, tuple[Source, list[Attempt]]] = {}
        for row in stores["sqlite"].attempts():
            if row.source not in grouped:
                grouped[row.source] = (Source(row.source, JUNIT, row.run_id, row.sha, row.branch), [])
            grouped[row.source][1].append(
                Attempt(
                    row.test_id, row.layer, row.variant, row.attempt, row.outcome, row.duration, row.worker
                )
            )
        batches = list(grouped.values())[: max(files // 2, WRITERS * 10)]
        for store in stores.values():
            store.close()

        emit(case, "attempts_stored", attempts)
        emit(case, "ingest_seconds_sqlite", seconds["sqlite"])
        emit(case, "ingest_seconds_postgresql", seconds["postgresql"])
        emit(case, "ingest_ratio", seconds["postgresql"] / seconds["sqlite"])
        emit(case, "report_seconds_sqlite", best["sqlite"])
        emit(case, "report_seconds_postgresql", best["postgresql"])
        emit(case, "report_ratio", best["postgresql"] / best["sqlite"])

        one = throughput(fresh(), batches, 1)
        many = throughput(fresh(), batches, WRITERS)
        throughput_case = f"{len(batches)} sources x {TESTS_PER_FILE} tests"
        emit(throughput_case, "attempts_per_second_1_writer", one, digits=0)
        emit(throughput_case, f"attempts_per_second_{WRITERS}_writers", many, digits=0)
        emit(throughput_case, "concurrent_speedup", many / one)
    return 0


if __name__ == "__main__":
    sys.exit(main())
