"""The per-day budget: a ledger shared by concurrent processes, a breaker that trips once and refuses
later runs before they start, and a ledger that is never silently reset to zero."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anthropic
import pytest

import pytest_agentevals as ae
from pytest_agentevals import RunStopped
from pytest_agentevals.errors import LedgerError
from pytest_agentevals.guards import DailyBudget, Ledger
from pytest_agentevals.recording import current_recorder
from pytest_agentevals.sim import Reply, SimServer

from ..guard_support import chat, events_of, guard_events, kinds

LIMIT = 0.01  # USD: about 60 of the test's calls, or 9 of their reservations at once


def daily_run(path: Path, ledger: Path, turns: int = 200) -> BaseException | None:
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        try:
            with ae.Recorder(path, guards=[DailyBudget(LIMIT, ledger)]):
                chat(client, turns)
        except Exception as exc:
            return exc
    return None


def spent(ledger: Path, day: str | None = None) -> float:
    data = json.loads(ledger.read_text())
    return float(data["days"][day or dt.date.today().isoformat()]["spent_usd"])


def trace_cost(path: Path) -> float:
    return float(ae.read_trace(path)[-1]["totals"]["cost_usd"])


def test_the_breaker_trips_and_the_next_run_is_refused_before_it_starts(tmp_path: Path) -> None:
    ledger = tmp_path / ".agentevals" / "ledger.json"
    first = daily_run(tmp_path / "first.trace.jsonl", ledger)
    assert isinstance(first, RunStopped)
    assert first.status == "budget_exhausted"
    stop = guard_events(events_of(tmp_path / "first.trace.jsonl"))[0]
    assert stop["guard"] == "daily_budget"
    assert stop["key"] == "max_daily_cost_usd"
    assert stop["ledger"] == str(ledger)
    assert spent(ledger) == pytest.approx(trace_cost(tmp_path / "first.trace.jsonl"))
    assert spent(ledger) + stop["wanted"] > LIMIT >= spent(ledger)
    day = json.loads(ledger.read_text())["days"][dt.date.today().isoformat()]
    assert day["tripped"]["limit_usd"] == LIMIT
    assert json.loads(ledger.read_text())["reservations"] == {}  # the run ended: nothing held

    second = daily_run(tmp_path / "second.trace.jsonl", ledger)
    assert isinstance(second, RunStopped)
    assert "refused before it started: today's cost breaker tripped" in second.reason
    events = events_of(tmp_path / "second.trace.jsonl")
    assert kinds(events) == ["run_start", "guard", "run_end"]  # no model call left
    assert events[-1]["status"] == "budget_exhausted"
    assert current_recorder() is None


def test_raising_the_limit_above_the_trip_lets_runs_start_again(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.json")
    assert ledger.start_run("a", 1.0) is None
    state, granted = ledger.hold("a", [], 0.0, 2.0, 2.0, 1.0)
    assert granted is None  # not even the call fits: the breaker trips
    assert state.spent_usd == 0.0
    assert ledger.start_run("b", 1.0) is not None  # tripped at $1
    assert ledger.start_run("b", 0.5) is not None
    assert ledger.start_run("b", 5.0) is None  # a deliberately higher limit
    assert ledger.hold("b", [], 0.0, 2.0, 3.0, 5.0)[1] == 3.0
    ledger.finish("b", [(ledger.today(), 1.5)])
    assert ledger.state().spent_usd == 1.5
    assert ledger.state().reserved_usd == 0.0


def test_a_lease_is_cut_to_the_room_left_and_given_back_at_the_end(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.json")
    assert ledger.hold("other", [], 0.0, 0.5, 0.5, 1.0)[1] == 0.5
    state, granted = ledger.hold("mine", [], 0.0, 0.2, 0.8, 1.0)
    assert granted == 0.5  # all the room there is, more than the call needs
    assert state.reserved_usd == 0.5  # what the other run holds
    ledger.finish("mine", [(ledger.today(), 0.1)])
    assert ledger.state().spent_usd == 0.1
    assert ledger.state().reserved_usd == 0.5  # the other run's lease only


def test_a_run_takes_a_lease_so_most_calls_touch_no_file(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.json")
    transactions: list[float | None] = []
    hold = ledger.hold

    def counted(*args: Any) -> Any:
        state, granted = hold(*args)
        transactions.append(granted)
        return state, granted

    ledger.hold = counted  # type: ignore[method-assign]
    path = tmp_path / "lease.trace.jsonl"
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        with ae.Recorder(path, guards=[DailyBudget(10.0, ledger)]):
            chat(client, 30)
            held = json.loads(ledger.path.read_text())["reservations"]
    # 30 calls, two transactions: one lease of a fiftieth of $10 at the first call, and the end.
    assert transactions == [pytest.approx(0.2), 0.0]
    assert [entry["usd"] for entry in held.values()] == [pytest.approx(0.2)]
    assert spent(ledger.path) == pytest.approx(trace_cost(path))  # settled at the end, nothing held
    assert json.loads(ledger.path.read_text())["reservations"] == {}


CONCURRENT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import anthropic
    import pytest_agentevals as ae
    from pytest_agentevals.guards import DailyBudget
    from pytest_agentevals.sim import Reply, SimServer

    trace, ledger, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        try:
            with ae.Recorder(trace, guards=[DailyBudget(float(sys.argv[4]), ledger)]):
                Path(str(trace) + ".ready").touch()  # this run started...
                while not go.exists():  # ...and both start spending together
                    time.sleep(0.005)
                for turn in range(400):
                    client.messages.create(
                        model="claude-sonnet-4-6",
                        max_tokens=64,
                        messages=[{"role": "user", "content": f"question {turn}: " + "words " * 20}],
                    )
        except ae.RunStopped as stop:
            print(stop.status)
    """
)


def test_two_concurrent_processes_share_the_day_and_nothing_is_double_spent(tmp_path: Path) -> None:
    script = tmp_path / "spend.py"
    script.write_text(CONCURRENT)
    ledger, go = tmp_path / ".agentevals" / "ledger.json", tmp_path / "go"
    traces = [tmp_path / f"worker-{n}.trace.jsonl" for n in (1, 2)]
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(trace), str(ledger), str(go), str(LIMIT)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for trace in traces
    ]
    deadline = time.monotonic() + 60
    while not all(Path(str(trace) + ".ready").exists() for trace in traces):  # both runs started
        assert time.monotonic() < deadline, "the workers did not start"
        assert all(worker.poll() is None for worker in workers), "a worker ended before it started"
        time.sleep(0.01)
    go.touch()
    outputs = [worker.communicate(timeout=120)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0]
    assert [out.strip() for out in outputs] == ["budget_exhausted", "budget_exhausted"]
    costs = [trace_cost(trace) for trace in traces]
    assert all(cost > 0 for cost in costs)  # both spent: they really ran side by side
    # Every cent in the ledger is a cent in a trace, once; the day never went over its limit.
    assert spent(ledger) == pytest.approx(sum(costs), abs=1e-9)
    assert spent(ledger) <= LIMIT
    for trace in traces:
        events = events_of(trace)
        assert events[-1]["status"] == "budget_exhausted"
        assert guard_events(events)[-1]["key"] == "max_daily_cost_usd"
    # A third run that day is refused before it starts.
    third = daily_run(tmp_path / "third.trace.jsonl", ledger)
    assert isinstance(third, RunStopped)
    assert kinds(events_of(tmp_path / "third.trace.jsonl")) == ["run_start", "guard", "run_end"]


def test_a_corrupt_ledger_is_an_error_naming_it_and_is_left_alone(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    ledger.write_text('{"version": 1, "days": {"2025-01-01": {"spent_usd": "lots"}}, "reservations": {}}')
    before = ledger.read_bytes()
    path = tmp_path / "corrupt.trace.jsonl"
    with pytest.raises(LedgerError) as error:
        ae.Recorder(path, guards=[DailyBudget(LIMIT, ledger)]).start()
    assert str(ledger) in str(error.value)
    assert "is corrupt: day 2025-01-01: spent_usd" in str(error.value)
    assert "move the file away by hand" in str(error.value)
    assert ledger.read_bytes() == before  # never reset to zero
    events = events_of(path)
    assert kinds(events) == ["run_start", "guard", "run_end"]
    assert events[1]["action"] == "error"
    assert events[-1]["status"] == "error"


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b"[]",
        b'{"version": 2, "days": {}, "reservations": {}}',
        b'{"version": 1, "days": {"yesterday": {}}, "reservations": {}}',
        b'{"version": 1, "days": {}, "reservations": {"r": {"pid": true, "usd": 1}}}',
        b'{"version": 1, "days": {}, "reservations": {"r": {"pid": 5, "usd": 1, "day": "x"}}}',
        b"{" + b" " * (1 << 20) + b"}",
    ],
    ids=["empty", "text", "list", "version", "day", "pid", "reservation-day", "huge"],
)
def test_every_kind_of_bad_ledger_is_refused(tmp_path: Path, content: bytes) -> None:
    ledger = tmp_path / "ledger.json"
    ledger.write_bytes(content)
    with pytest.raises(LedgerError, match=str(ledger)):
        Ledger(ledger).start_run("r", 1.0)
    assert ledger.read_bytes() == content


def test_a_locked_ledger_is_an_error_naming_it(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.json", lock_timeout=0.1)
    with open(ledger.lock_path, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(LedgerError) as error:
            ledger.start_run("r", 1.0)
    assert f"the ledger {ledger.path} is locked ({ledger.lock_path})" in str(error.value)
    assert ledger.start_run("r", 1.0) is None  # once released, it works


def test_a_dead_process_reservation_counts_as_spent(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(gone.stdout)
    today = dt.date.today().isoformat()
    path = tmp_path / "ledger.json"
    data: dict[str, Any] = {
        "version": 1,
        "days": {today: {"spent_usd": 0.5, "calls": 3, "runs": 1, "tripped": None}},
        "reservations": {"killed": {"pid": pid, "usd": 0.25, "day": today}},
    }
    path.write_text(json.dumps(data))
    ledger = Ledger(path)
    assert ledger.state().reserved_usd == 0.0  # a dead process holds nothing...
    assert ledger.start_run("next", 10.0) is None
    assert ledger.state().spent_usd == 0.75  # ...and what it held is counted, not forgotten
    assert "killed" not in json.loads(path.read_text())["reservations"]


def test_old_days_are_pruned(tmp_path: Path) -> None:
    today = dt.date(2025, 6, 30)
    ledger = Ledger(tmp_path / "ledger.json", today=lambda: today)
    ledger.finish("r", [("2025-01-01", 1.0), ("2025-06-29", 2.0)])
    days = json.loads(ledger.path.read_text())["days"]
    assert set(days) == {"2025-06-29"}
    assert os.stat(ledger.path).st_size < 1000
