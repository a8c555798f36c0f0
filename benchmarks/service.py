"""A service's recording overhead: 1, 8 and 64 concurrent sessions of 50 steps each (a model call and
an `@ae.tool` call per step) against the simulated server, each session in a thread of its own,
recorded into a `RunStore` against not recorded at all.

Both sides run in this one process, in rounds, the two in turn first (off-on, on-off, ...), so drift
in the machine's load falls on both alike. Per concurrency the figures are the median ratio of a
round's recorded run over its bare run (`overhead_ratio`, wall and CPU), and what recording adds per
call in milliseconds (`ms_added_per_call`, recorded minus bare over every call of the run): flat in
the number of sessions when no run's recording pays for the others'. `per_call_cost_growth` is the
64-session figure over the 1-session one; `ms_per_session` what a session costs apart from its calls
(its trace opened and closed, retention applied). Run from the repository root:

    python benchmarks/service.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

import _figures as figures  # benchmarks/: the folder of the script run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anthropic

import pytest_agentevals as ae
from pytest_agentevals.sim import Reply, SimRequest, SimServer

CONCURRENCY = (1, 8, 64)
STEPS = 50
ROUNDS, QUICK_ROUNDS = 4, 1
AIM = 1.10
KEY = "not-a-real-key-for-the-simulated-server"


def echo(request: SimRequest) -> Reply:
    return Reply.text("ok " + request.last_text[-12:])


@ae.tool
def lookup(session: int, step: int) -> str:
    return f"{session}:{step}"


def session(url: str, number: int, store: ae.RunStore | None, started: threading.Barrier) -> None:
    client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
    messages = [{"role": "user", "content": f"session {number}"}]

    def steps() -> None:
        started.wait()  # every session of the run starts together
        for step in range(STEPS):
            client.messages.create(model="sim-service-1", max_tokens=16, messages=messages)
            lookup(number, step)

    if store is None:
        steps()
    else:
        with store.run(f"session/{number}", agent="bench"):
            steps()
    client.close()


def once(url: str, sessions: int, store: ae.RunStore | None) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `sessions` concurrent sessions."""
    gc.collect()
    started = threading.Barrier(sessions + 1)
    threads = [
        threading.Thread(target=session, args=(url, number, store, started)) for number in range(sessions)
    ]
    for thread in threads:
        thread.start()
    started.wait()
    wall, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.join()
    return time.perf_counter() - wall, time.process_time() - cpu


emit = partial(figures.emit, "service")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROUNDS} round, not {ROUNDS}")
    args = parser.parse_args()
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    added_per_call: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as folder, SimServer(echo, seed=1) as sim:
        store = ae.RunStore(Path(folder) / "runs", keep=200)
        once(sim.url, 2, None)  # warm up the SDK, the server and recording's own imports
        once(sim.url, 2, store)
        for sessions in CONCURRENCY:
            off: list[tuple[float, float]] = []
            on: list[tuple[float, float]] = []
            for index in range(rounds):
                pair = [(off, None), (on, store)]
                for side, with_store in pair if index % 2 == 0 else reversed(pair):
                    side.append(once(sim.url, sessions, with_store))
            calls = sessions * STEPS * 2  # a model call and a tool call per step
            case = f"{sessions} sessions x {STEPS} steps"
            emit(case, "seconds_recording_off", statistics.median(run[0] for run in off))
            emit(case, "seconds_recording_on", statistics.median(run[0] for run in on))
            for prefix, ratios, added in figures.rounds_compared(off, on, calls):
                emit(case, f"{prefix}overhead_ratio", statistics.median(ratios), aim=AIM, rounds=rounds)
                emit(case, f"{prefix}ms_added_per_call", statistics.median(added), rounds=rounds)
                if not prefix:
                    added_per_call[sessions] = statistics.median(added)
        # A session's own cost, apart from its calls: the trace opened (run_start fsynced), closed
        # (run_end fsynced) and retention applied, in a store of 200 traces.
        empty = 20 if args.quick else 100
        started = time.perf_counter()
        for number in range(empty):
            with store.run(f"empty/{number}", agent="bench"):
                pass
        emit("one session, no calls", "ms_per_session", (time.perf_counter() - started) * 1000 / empty)
        if added_per_call[CONCURRENCY[0]] > 0:
            emit(
                f"{CONCURRENCY[-1]} vs {CONCURRENCY[0]} sessions",
                "per_call_cost_growth",
                added_per_call[CONCURRENCY[-1]] / added_per_call[CONCURRENCY[0]],
            )


if __name__ == "__main__":
    main()
