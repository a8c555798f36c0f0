"""`ae.RunStore`: one trace per session in one folder, with safe names from crafted session ids,
retention by count, bytes and age, budgets per session and the day ledger across all of them, and a
trace readable up to its last event after the service is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest

import pytest_agentevals as ae
from pytest_agentevals.errors import RecordingError, RunStopped
from pytest_agentevals.recording.store import safe_name
from pytest_agentevals.sim import SimServer

from .concurrent_support import ask, echo, lookup, sessions_seen

# $1 an output token: a call (max_tokens=16) reserves $16 before it leaves and spends a few dollars.
PRICED = {"sim-concurrent-1": {"input": 0.0, "output": 1_000_000.0, "cache_write": 0.0, "cache_read": 0.0}}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(echo, seed=32) as server:
        yield server


CRAFTED = ["../x", "a/../../etc/passwd", "nul\x00byte", "x" * 10_000, "séance-✓-会话", "..", ".hidden"]
CRAFTED += ["\ud800"]  # a lone surrogate


def test_crafted_session_ids_become_distinct_safe_names_inside_the_store(tmp_path: Path) -> None:
    store = ae.RunStore(tmp_path / "runs")
    paths = []
    for session_id in CRAFTED:
        with store.run(session_id) as recorder:
            paths.append(recorder.path)
    for path in paths:
        assert path.parent == tmp_path / "runs"
        assert len(path.name) < 100
        assert not path.name.startswith(".")
        assert "\x00" not in path.name
        assert path.is_file()
    assert len(set(paths)) == len(CRAFTED)
    assert safe_name("séance") == safe_name("séance")  # stable: the same id, the same stem
    assert safe_name("séance").startswith("seance-")
    sessions = [e["session"] for p in paths for e in ae.read_trace(p) if e["type"] == "run_start"]
    assert sessions[:-1] == CRAFTED[:-1]  # a lone surrogate is written escaped, as every trace string
    with store.run("../x") as again:  # a repeated session gets a file of its own, never appends
        pass
    assert again.path != paths[0]
    assert again.path.name.startswith(paths[0].name.removesuffix(".trace.jsonl"))
    with pytest.raises(RecordingError, match="non-empty string"), store.run(""):
        pass


def test_a_link_in_the_store_is_never_written_through(tmp_path: Path) -> None:
    store = ae.RunStore(tmp_path / "runs")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (tmp_path / "runs" / f"{safe_name('s')}.trace.jsonl").symlink_to(outside)
    with store.run("s") as recorder:
        pass
    assert outside.read_text() == "keep me"
    assert not recorder.path.is_symlink()
    assert outside not in store.traces()


def _aged(store: ae.RunStore, count: int) -> list[Path]:
    """`count` finished sessions, the first the oldest (mtimes 100 s apart, the last 100 s ago)."""
    paths = []
    for n in range(count):
        with store.run(f"s{n}") as recorder:
            ae.note("padding", text="x" * 100)
        paths.append(recorder.path)
    now = time.time()
    for n, path in enumerate(paths):
        ago = (count - n) * 100
        os.utime(path, (now - ago, now - ago))
    return paths


def test_retention_by_count_bytes_and_age_deletes_the_oldest_first(tmp_path: Path) -> None:
    paths = _aged(ae.RunStore(tmp_path), 4)
    assert ae.RunStore(tmp_path, keep=3).prune() == paths[:1]
    newest = paths[-1].stat().st_size
    assert ae.RunStore(tmp_path, max_bytes=newest + paths[-2].stat().st_size).prune() == [paths[1]]
    assert ae.RunStore(tmp_path, max_age=150).prune() == [paths[2]]
    assert ae.RunStore(tmp_path).traces() == [paths[3]]


def test_retention_runs_as_a_session_ends_and_never_deletes_an_open_trace(tmp_path: Path) -> None:
    store = ae.RunStore(tmp_path, keep=1)
    with store.run("first") as first:
        with store.run("second") as second:
            pass
        assert second.path.exists()  # the only finished one: within keep
        with store.run("third") as third:
            pass
        assert not second.path.exists()  # third ended: the older finished one goes, the open one stays
        assert third.path.exists()
        assert first.path.exists()
    assert store.traces() == [first.path]  # first ended last: the newest


def test_budgets_are_per_session_and_the_day_ledger_spans_every_session(
    sim: SimServer, tmp_path: Path, fake_api_key: str
) -> None:
    client = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key, max_retries=0)
    store = ae.RunStore(tmp_path / "runs", budget=ae.Budget(max_calls=2))
    for name in ("a", "b"):  # each session has two calls of its own; the third stops that session

        def three_calls(name: str = name) -> Path:
            with store.run(name, agent=name) as recorder:
                for n in range(3):
                    ask(client, name, n)
            return recorder.path  # pragma: no cover - the third call is stopped

        with pytest.raises(RunStopped):
            three_calls()
        (recorder_path,) = (p for p in store.traces() if safe_name(name) in p.name)
        assert sessions_seen(recorder_path)[0] == [f"{name} call 0", f"{name} call 1"]
        assert sessions_seen(recorder_path)[2] == "budget_exhausted"

    # A day budget: every session's spend goes to one ledger, so a later session finds the day spent.
    daily = ae.RunStore(
        tmp_path / "daily",
        budget=ae.Budget(max_daily_cost_usd=20.0),
        ledger=tmp_path / "ledger.json",
        prices=PRICED,
    )
    spent, stopped = 0, None
    for name in ("c", "d", "e", "f"):
        try:
            with daily.run(name, agent=name):
                ask(client, name, 0)
                spent += 1
        except RunStopped as exc:
            stopped = exc
            break
    assert stopped is not None, "the day's budget never stopped a session"
    assert stopped.status == "budget_exhausted"
    assert spent >= 2  # the sessions before it spent the day between them, none alone


SERVICE = """
import sys
import anthropic
import pytest_agentevals as ae

url, folder = sys.argv[1:3]
store = ae.RunStore(folder)
client = anthropic.Anthropic(base_url=url, max_retries=0)

@ae.tool
def lookup(session, n):
    return f"{session}:{n}"

with store.run("user/7: ../../etc", agent="service") as recorder:
    for n in range(3):
        client.messages.create(
            model="sim-concurrent-1", max_tokens=16,
            messages=[{"role": "user", "content": f"svc call {n}"}],
        )
        lookup("svc", n)
    print(recorder.path, flush=True)
    sys.stdin.readline()  # killed here, mid-session
"""


def test_a_service_killed_mid_session_leaves_its_trace_readable_to_the_last_event(
    sim: SimServer, tmp_path: Path, fake_api_key: str
) -> None:
    env = {**os.environ, "ANTHROPIC_API_KEY": fake_api_key}
    service = subprocess.Popen(
        [sys.executable, "-c", SERVICE, sim.url, str(tmp_path / "runs")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert service.stdout is not None
        trace = Path(service.stdout.readline().strip())
        assert trace.parent == tmp_path / "runs", service.stderr.read() if service.stderr else ""
        service.send_signal(signal.SIGKILL)
        service.wait(timeout=60)
    finally:
        if service.poll() is None:
            service.kill()
    assert service.returncode == -signal.SIGKILL
    events = list(ae.read_trace(trace))
    assert [e["type"] for e in events] == ["run_start", *["model_call", "tool_call"] * 3]
    assert [e["request"]["body"]["messages"][-1]["content"] for e in events if e["type"] == "model_call"] == [
        f"svc call {n}" for n in range(3)
    ]
    assert fake_api_key not in trace.read_text()


def test_sessions_side_by_side_in_one_store_each_get_their_own_trace(
    sim: SimServer, tmp_path: Path, fake_api_key: str
) -> None:
    store = ae.RunStore(tmp_path / "runs")
    client = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key, max_retries=0)
    started = threading.Barrier(3)
    paths: dict[str, Path] = {}

    def one(name: str) -> None:
        with store.run(f"session {name}", agent=name) as recorder:
            paths[name] = recorder.path
            started.wait()
            for n in range(5):
                ask(client, name, n)
                lookup(name, n)

    threads = [threading.Thread(target=one, args=(name,)) for name in ("p", "q", "r")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name, path in paths.items():
        asked, tools, status = sessions_seen(path)
        assert asked == [f"{name} call {n}" for n in range(5)]
        assert tools == [f"{name}:{n}" for n in range(5)]
        assert status == "ok"
