"""Runs side by side in one process (issue 31): each recording, replay and tool source belongs to
the context that opened it, so concurrent sessions in threads, asyncio tasks and thread pools each
get exactly their own events; an event from a context of no run, while several are open, is refused."""

from __future__ import annotations

import asyncio
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest_agentevals as ae
from pytest_agentevals.errors import AmbiguousRun
from pytest_agentevals.recording import bound_executor
from pytest_agentevals.sim import SimServer

from ..conftest import make_fake_key
from .concurrent_support import (
    CALLS,
    EXECUTED,
    ask,
    ask_async,
    echo,
    expected,
    lookup,
    lookup_async,
    session,
    sessions_seen,
    steps,
)

NAMES = ("alpha", "beta", "gamma")


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(echo, seed=31) as server:
        yield server


def test_three_sessions_in_threads_each_record_exactly_their_own_calls(
    sim: SimServer, tmp_path: Path, fake_api_key: str
) -> None:
    started = threading.Barrier(len(NAMES))
    failures: list[BaseException] = []

    def run(name: str) -> None:
        try:
            session(name, tmp_path / f"{name}.trace.jsonl", sim.url, fake_api_key, started)
        except BaseException as exc:  # handed to the test's own thread
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(name,)) for name in NAMES]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    for name in NAMES:
        asked, tools, status = sessions_seen(tmp_path / f"{name}.trace.jsonl")
        assert (asked, tools) == expected(name), name
        assert status == "ok"


def test_three_sessions_in_asyncio_tasks_each_record_exactly_their_own_calls(
    sim: SimServer, tmp_path: Path, fake_api_key: str
) -> None:
    async def one(name: str, client: anthropic.AsyncAnthropic, started: asyncio.Barrier) -> None:
        with ae.Recorder(tmp_path / f"{name}.trace.jsonl", agent=name):
            await started.wait()  # all three recordings open before any call
            for n in range(CALLS):
                await ask_async(client, name, n)
                await lookup_async(name, n)

    async def main() -> None:
        client = anthropic.AsyncAnthropic(base_url=sim.url, api_key=fake_api_key, max_retries=0)
        started = asyncio.Barrier(len(NAMES))
        await asyncio.gather(*(one(name, client, started) for name in NAMES))
        await client.close()

    asyncio.run(main())
    for name in NAMES:
        asked, tools, status = sessions_seen(tmp_path / f"{name}.trace.jsonl")
        assert (asked, tools) == expected(name), name
        assert status == "ok"


def test_sessions_in_a_thread_pool_fan_their_tools_out_through_a_bound_executor(
    sim: SimServer, tmp_path: Path, fake_api_key: str
) -> None:
    # Each session runs as a pool task and hands its tool calls to a second, shared pool: bound to
    # the submitting session, every tool call lands in that session's trace, whichever worker ran it.
    started = threading.Barrier(len(NAMES))
    with ThreadPoolExecutor(4) as plain_tools, ThreadPoolExecutor(len(NAMES)) as sessions:
        tools = bound_executor(plain_tools)

        def one(name: str) -> None:
            client = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key, max_retries=0)
            with ae.Recorder(tmp_path / f"{name}.trace.jsonl", agent=name):
                started.wait()
                for n in range(CALLS):
                    ask(client, name, n)
                    tools.submit(lookup, name, n).result()

        for future in [sessions.submit(one, name) for name in NAMES]:
            future.result()
    for name in NAMES:
        asked, tool_outputs, status = sessions_seen(tmp_path / f"{name}.trace.jsonl")
        assert (asked, tool_outputs) == expected(name), name
        assert status == "ok"


def test_a_plain_worker_thread_of_the_only_run_records_into_it(
    sim: SimServer, tmp_path: Path, fake_api_key: str
) -> None:
    # The single-run fallback: today's agents that start worker threads the plain way keep working.
    client = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key, max_retries=0)
    trace = tmp_path / "only.trace.jsonl"
    with ae.Recorder(trace, agent="only"):
        worker = threading.Thread(
            target=lambda: [(ask(client, "only", n), lookup("only", n)) for n in range(3)]
        )
        worker.start()
        worker.join()
    assert sessions_seen(trace) == (*expected("only", 3), "ok")


def test_an_event_from_a_context_of_no_run_is_refused_while_two_runs_are_open(
    sim: SimServer, tmp_path: Path, fake_api_key: str
) -> None:
    opened, release = threading.Barrier(3), threading.Event()
    client = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key, max_retries=0)

    def one(name: str) -> None:
        with ae.Recorder(tmp_path / f"{name}.trace.jsonl", agent=name):
            opened.wait()
            release.wait()

    threads = [threading.Thread(target=one, args=(name,)) for name in ("left", "right")]
    for thread in threads:
        thread.start()
    opened.wait()
    try:
        with pytest.raises(AmbiguousRun) as refused:
            lookup("nobody", 0)
        message = str(refused.value)
        assert "left.trace.jsonl" in message
        assert "right.trace.jsonl" in message
        assert "pytest_agentevals.bind" in message
        with pytest.raises(AmbiguousRun):
            ae.note("whose note is this?")
        with pytest.raises(anthropic.APIConnectionError) as failed:  # the SDK wraps what its transport raised
            ask(client, "nobody", 0)
        assert isinstance(failed.value.__cause__, AmbiguousRun)
        # Any other request of a context of no run (a service's own health check) is no run's: it
        # goes on, and neither trace holds it.
        assert httpx.get(f"{sim.url}/health").status_code in (200, 404)
    finally:
        release.set()
        for thread in threads:
            thread.join()
    for name in ("left", "right"):
        assert sessions_seen(tmp_path / f"{name}.trace.jsonl") == ([], [], "ok")
    lookup("nobody", 1)  # no run open: a plain call again


def test_two_replays_side_by_side_each_answer_only_their_own_session(
    sim: SimServer, tmp_path: Path, fake_api_key: str
) -> None:
    names, calls = ("left", "right"), 5
    live = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key, max_retries=0)
    for name in names:
        with ae.Recorder(tmp_path / f"{name}.trace.jsonl", agent=name):
            steps(live, name, calls)
    EXECUTED.clear()
    started = threading.Barrier(len(names))
    got: dict[str, list[str]] = {}
    failures: list[BaseException] = []
    offline = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key=fake_api_key, max_retries=0)

    def replay(name: str) -> None:
        try:
            with ae.Replayer(tmp_path / f"{name}.trace.jsonl") as replayer:
                started.wait()
                got[name] = steps(offline, name, calls)
            assert replayer.report.served_tools == calls
        except BaseException as exc:  # handed to the test's own thread
            failures.append(exc)

    threads = [threading.Thread(target=replay, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    for name in names:
        assert got[name] == [x for n in range(calls) for x in (f"seen {name} call {n}", f"{name}:{n}")]
    assert EXECUTED == []  # every tool call answered from its own replay, none run for real


STEPS = 2  # model call + tool call pairs per session in an interleaving


def _plans(count: int) -> list[list[str]]:
    return [["open", *(["model", "tool"] * STEPS), "close"] for _ in range(count)]


@st.composite
def interleavings(draw: st.DrawFn) -> list[int]:
    """An order of every action of three sessions (each session's own actions in order): which
    session acts next, from opening its recording to closing it."""
    tokens = [i for i, plan in enumerate(_plans(len(NAMES))) for _ in plan]
    return draw(st.permutations(tokens))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=interleavings())
def test_any_interleaving_of_three_sessions_in_threads_keeps_each_trace_its_own(
    sim: SimServer, order: list[int]
) -> None:
    key = make_fake_key("interleave")
    plans = _plans(len(NAMES))
    turns = [threading.Semaphore(0) for _ in NAMES]
    done = threading.Semaphore(0)
    failures: list[BaseException] = []
    with tempfile.TemporaryDirectory() as folder:
        traces = [Path(folder) / f"{name}.trace.jsonl" for name in NAMES]

        def worker(i: int) -> None:
            client = anthropic.Anthropic(base_url=sim.url, api_key=key, max_retries=0)
            recorder, step = ae.Recorder(traces[i], agent=NAMES[i]), 0
            for action in plans[i]:
                turns[i].acquire()  # the conductor says when this session acts
                try:
                    if action == "open":
                        recorder.start()
                    elif action == "model":
                        ask(client, NAMES[i], step)
                    elif action == "tool":
                        lookup(NAMES[i], step)
                        step += 1
                    else:
                        recorder.stop()
                except BaseException as exc:  # handed to the test's own thread
                    failures.append(exc)
                finally:
                    done.release()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(NAMES))]
        for thread in threads:
            thread.start()
        for i in order:
            turns[i].release()
            done.acquire()
        for thread in threads:
            thread.join()
        assert not failures, failures
        for name, trace in zip(NAMES, traces, strict=True):
            assert sessions_seen(trace) == (*expected(name, STEPS), "ok"), name
