"""Guards on the recorder, from Python, against the simulated server through the real anthropic SDK:
each stops the run at the right call, with the right status and event, and nothing half-written."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

import pytest_agentevals as ae
from pytest_agentevals import ConfigError, RunStopped
from pytest_agentevals.errors import GuardError
from pytest_agentevals.guards import Budget, BudgetLeft, Ruling, RunBudget, Watchdog, guards_for
from pytest_agentevals.recording import current_recorder
from pytest_agentevals.sim import Fault, Reply, SimServer

from ..guard_support import MODEL, Clock, Spy, chat, events_of, guard_events, kinds


def replies(n: int = 40) -> list[Reply]:
    return [Reply.text(f"answer {i}") for i in range(n)]


def client_for(sim: SimServer, retries: int = 2) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=retries)


def run_guarded(
    path: Path,
    guards: list[Any],
    turns: int = 10,
    *,
    script: Any = None,
    retries: int = 2,
    body: Callable[[anthropic.Anthropic], Any] | None = None,
    **chat_kw: Any,
) -> tuple[int, BaseException | None, int]:
    """Chat under `guards` (or run `body(client)`); returns the calls that came back, the exception
    that ended the run, and how many requests the sim got."""
    with SimServer(script if script is not None else replies(), seed=1) as sim:
        client = client_for(sim, retries)
        caught: BaseException | None = None
        try:
            with ae.Recorder(path, agent="guarded", guards=guards):
                if body is not None:
                    body(client)
                else:
                    chat(client, turns, **chat_kw)
        except Exception as exc:
            caught = exc
        sent = len(sim.requests)
    done = sum(1 for e in ae.read_trace(path) if e["type"] == "model_call" and e["response"]["status"] == 200)
    return done, caught, sent


# -- the stop itself --------------------------------------------------------------------------------


def test_a_stop_is_one_documented_exception_the_sdk_neither_retries_nor_wraps(tmp_path: Path) -> None:
    path = tmp_path / "calls.trace.jsonl"
    done, caught, sent = run_guarded(path, [RunBudget(max_calls=3)], retries=5)
    assert done == 3
    assert sent == 3
    assert isinstance(caught, RunStopped)
    assert isinstance(caught, ae.AgentEvalsError)
    assert not isinstance(caught, anthropic.APIConnectionError)
    assert (caught.status, caught.guard) == ("budget_exhausted", "budget")
    assert "max_calls 3" in caught.reason
    assert str(caught).endswith("(max_calls was set by RunBudget(max_calls=3): raise it there)")
    events = events_of(path)
    assert kinds(events) == ["run_start", *["model_call"] * 3, "guard", "run_end"]
    assert events[0]["budget"] == {"max_calls": 3}
    assert events[0]["guards"] == ["budget"]
    stop = events[-2]
    assert stop["guard"] == "budget"
    assert stop["action"] == "stop"
    assert stop["status"] == "budget_exhausted"
    assert stop["key"] == "max_calls"
    assert stop["limit"] == 3
    assert stop["step"] == 3
    assert events[-1]["status"] == "budget_exhausted"
    assert "error" not in events[-1]


def test_a_stopped_run_refuses_every_later_request_without_more_events(tmp_path: Path) -> None:
    path = tmp_path / "sticky.trace.jsonl"
    with SimServer(replies(), seed=1) as sim:
        client = client_for(sim)
        with ae.Recorder(path, guards=[RunBudget(max_calls=1)]) as recorder:
            chat(client, 1)
            for _ in range(2):
                with pytest.raises(RunStopped):
                    chat(client, 1)
            recorder.end("ok")  # the harness cannot talk the stop away
        assert len(sim.requests) == 1
    events = events_of(path)
    assert len(guard_events(events)) == 1
    assert events[-1]["status"] == "budget_exhausted"


# -- per call -------------------------------------------------------------------------------------


def test_a_call_over_max_call_tokens_is_refused_before_it_leaves(tmp_path: Path) -> None:
    path = tmp_path / "call.trace.jsonl"
    spy = Spy()
    # The conversation grows; the first call whose estimate passes the ceiling is refused.
    done, caught, sent = run_guarded(path, [spy, RunBudget(max_call_tokens=250)], grow=True, max_tokens=64)
    wanted = [call.tokens for call in spy.calls]
    first_over = next(i for i, tokens in enumerate(wanted) if tokens > 250)
    assert first_over >= 2  # a few calls fit
    assert done == sent == first_over
    assert isinstance(caught, RunStopped)
    stop = guard_events(events_of(path))[0]
    assert stop["key"] == "max_call_tokens"
    assert stop["wanted"] == wanted[first_over]
    assert f"model call {first_over + 1} may use {wanted[first_over]:,} tokens" in stop["reason"]


def test_a_call_over_max_call_cost_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "callcost.trace.jsonl"
    # max_tokens=4000 of output at $15/MTok may cost $0.06: over a $0.05 ceiling at the first call.
    done, caught, sent = run_guarded(path, [RunBudget(max_call_cost_usd=0.05)], max_tokens=4000)
    assert (done, sent) == (0, 0)
    assert isinstance(caught, RunStopped)
    assert "max_call_cost_usd $0.05" in caught.reason
    events = events_of(path)
    assert kinds(events) == ["run_start", "guard", "run_end"]  # nothing guarded is half-written


def test_a_call_ten_times_the_median_is_reported_not_stopped(tmp_path: Path) -> None:
    path = tmp_path / "outlier.trace.jsonl"
    script = [*replies(4), Reply.text("x" * 4000), Reply.text("small again")]
    done, caught, _ = run_guarded(path, [RunBudget(max_calls=100)], turns=6, script=script, max_tokens=2000)
    assert caught is None
    assert done == 6
    events = events_of(path)
    warns = [e for e in guard_events(events) if e["action"] == "warn"]
    assert len(warns) == 1
    assert warns[0]["key"] == "call_size"
    assert warns[0]["used"] >= 10 * warns[0]["median"]
    assert warns[0]["reason"].startswith("model call 5 used ")
    assert events[-1]["status"] == "ok"


# -- per run --------------------------------------------------------------------------------------


def test_max_tokens_stops_at_the_first_call_that_could_overshoot(tmp_path: Path) -> None:
    path = tmp_path / "tokens.trace.jsonl"
    spy = Spy()
    done, caught, sent = run_guarded(path, [spy, RunBudget(max_tokens=1500)], turns=30, grow=True)
    assert isinstance(caught, RunStopped)
    assert caught.status == "budget_exhausted"
    used = [result.tokens for _, result in spy.results if result is not None]
    refused = spy.calls[-1]
    assert sum(used) + refused.tokens > 1500  # the refused call could have overshot...
    assert all(sum(used[:i]) + spy.calls[i].tokens <= 1500 for i in range(len(used)))  # ...none before
    end = events_of(path)[-1]
    assert end["status"] == "budget_exhausted"
    tokens = end["totals"]["tokens"]
    assert sum(tokens.values()) == sum(used) <= 1500  # never overshot: each estimate held
    assert done == sent == len(used)


def test_max_cost_usd_stops_at_the_right_call(tmp_path: Path) -> None:
    path = tmp_path / "cost.trace.jsonl"
    spy = Spy()
    _done, caught, _ = run_guarded(path, [spy, RunBudget(max_cost_usd=0.004)], turns=30, max_tokens=200)
    assert isinstance(caught, RunStopped)
    costs = [result.cost_usd or 0.0 for _, result in spy.results if result is not None]
    assert len(costs) >= 3
    assert sum(costs) + (spy.calls[-1].cost_usd or 0) > 0.004
    assert all(sum(costs[:i]) + (spy.calls[i].cost_usd or 0) <= 0.004 for i in range(len(costs)))
    end = events_of(path)[-1]
    assert end["totals"]["cost_usd"] == pytest.approx(sum(costs))
    assert end["totals"]["cost_usd"] <= 0.004
    assert guard_events(events_of(path))[0]["key"] == "max_cost_usd"


def test_max_seconds_uses_an_injectable_clock(tmp_path: Path) -> None:
    path = tmp_path / "time.trace.jsonl"
    clock = Clock()
    left: list[float | None] = []

    def body(client: anthropic.Anthropic) -> None:
        chat(client, 2)
        clock.now += 59.5
        left.append(ae.budget_left().seconds)
        chat(client, 1)
        clock.now += 0.5
        chat(client, 1)

    done, stopped, sent = run_guarded(path, [RunBudget(max_seconds=60, clock=clock)], body=body)
    assert (done, sent) == (3, 3)
    assert left == [pytest.approx(0.5)]
    assert isinstance(stopped, RunStopped)
    assert "max_seconds 60" in stopped.reason
    stop = guard_events(events_of(path))[0]
    assert stop["key"] == "max_seconds"
    assert stop["step"] == 3


def test_max_seconds_with_the_sims_slow_reply(tmp_path: Path) -> None:
    path = tmp_path / "slow.trace.jsonl"
    script = [Fault.slow(0.3, then=Reply.text("late")), *replies(3)]
    done, caught, sent = run_guarded(path, [RunBudget(max_seconds=0.2)], turns=3, script=script)
    assert (done, sent) == (1, 1)  # the slow call was in flight; the next one never left
    assert isinstance(caught, RunStopped)
    assert guard_events(events_of(path))[0]["key"] == "max_seconds"


def test_failed_and_broken_calls_give_their_reservation_back(tmp_path: Path) -> None:
    path = tmp_path / "weather.trace.jsonl"
    script = [
        Fault.rate_limit(retry_after=0.001),
        Reply.text("one"),
        Fault.drop(),
        Reply.text("two"),
        *replies(3),
    ]
    spy = Spy()
    budget = RunBudget(max_calls=3, max_tokens=100_000)
    done, caught, _sent = run_guarded(path, [spy, budget], turns=3, script=script)
    assert caught is None
    assert done == 3
    assert budget.calls == 3
    assert not budget._in_flight
    assert [r.status if r else None for _, r in spy.results] == [429, 200, None, 200, 200]
    assert events_of(path)[-1]["status"] == "ok"


def test_async_calls_in_flight_all_hold_their_reservations(tmp_path: Path) -> None:
    path = tmp_path / "async.trace.jsonl"

    async def main(url: str) -> list[Any]:
        client = anthropic.AsyncAnthropic(base_url=url, api_key="sim", max_retries=0)

        async def ask(i: int) -> Any:
            return await client.messages.create(
                model=MODEL, max_tokens=50, messages=[{"role": "user", "content": f"q{i}"}]
            )

        return await asyncio.gather(*(ask(i) for i in range(6)), return_exceptions=True)

    with SimServer(lambda request: Reply.text("a"), seed=2) as sim:
        with ae.Recorder(path, guards=[RunBudget(max_calls=4)]):
            outcomes = asyncio.run(main(sim.url))
        assert len(sim.requests) == 4
    assert sum(isinstance(o, RunStopped) for o in outcomes) == 2
    assert events_of(path)[-1]["totals"]["steps"] == 4


# -- prices ---------------------------------------------------------------------------------------


def test_a_model_without_a_price_is_refused_under_a_cost_budget(tmp_path: Path) -> None:
    path = tmp_path / "unpriced.trace.jsonl"
    done, caught, sent = run_guarded(path, [RunBudget(max_cost_usd=1)], model="my-finetune-7")
    assert (done, sent) == (0, 0)
    assert isinstance(caught, ConfigError)
    assert caught.key == "[tool.agentevals.prices.my-finetune-7]"
    assert "no price for model 'my-finetune-7'" in str(caught)
    assert "never counted as $0" in str(caught)
    events = events_of(path)
    assert kinds(events) == ["run_start", "guard", "run_end"]
    assert events[1]["action"] == "error"
    assert events[-1]["status"] == "error"


def test_without_a_cost_budget_an_unpriced_model_runs(tmp_path: Path) -> None:
    path = tmp_path / "free.trace.jsonl"
    done, caught, _ = run_guarded(path, [RunBudget(max_calls=5)], turns=2, model="my-finetune-7")
    assert caught is None
    assert done == 2


def test_a_price_override_prices_the_model(tmp_path: Path) -> None:
    path = tmp_path / "priced.trace.jsonl"
    with (
        SimServer(replies(), seed=1) as sim,
        ae.Recorder(
            path, prices={"my-finetune": {"input": 1.0, "output": 2.0}}, guards=[RunBudget(max_cost_usd=1)]
        ),
    ):
        chat(client_for(sim), 2, model="my-finetune-7")
    assert events_of(path)[-1]["status"] == "ok"


# -- budget_left ----------------------------------------------------------------------------------


def test_budget_left_says_what_remains(tmp_path: Path) -> None:
    assert ae.budget_left() == BudgetLeft()  # nothing records
    assert not ae.budget_left().limited
    assert ae.budget_left().describe() == ""
    clock = Clock()
    budget = Budget(max_tokens=50_000, max_cost_usd=2.0, max_calls=10, max_seconds=600, stall_calls=4)
    path = tmp_path / "left.trace.jsonl"
    with (
        SimServer(replies(), seed=1) as sim,
        ae.Recorder(path, guards=guards_for(budget, clock=clock)) as recorder,
    ):
        before = ae.budget_left()
        assert before == BudgetLeft(50_000, 2.0, 10, 600.0, None, 4, ("budget", "watchdog"))
        chat(client_for(sim), 3)
        clock.now += 100
        left = ae.budget_left()
    spent = recorder.totals["tokens"]
    assert left.tokens == 50_000 - sum(spent.values())
    assert left.cost_usd == pytest.approx(2.0 - recorder.totals["cost_usd"])
    assert (left.calls, left.seconds, left.calls_until_stall) == (7, 500.0, 1)
    assert left.limited
    assert (
        left.describe()
        == f"Budget left: about {left.tokens:,} tokens, ${left.cost_usd:.2f}, 7 model calls, 500 seconds."
    )


# -- the watchdog ---------------------------------------------------------------------------------


def progress_chat(client: anthropic.Anthropic, plan: list[float | None]) -> None:
    """One call per item of `plan`, then a verification with that progress (None: none)."""
    for progress in plan:
        chat(client, 1)
        if progress is not None:
            ae.verification("check", True, progress=progress)


def test_the_watchdog_asks_then_stops_the_run_as_stalled(tmp_path: Path) -> None:
    path = tmp_path / "stall.trace.jsonl"
    answers = [True, False]
    asked: list[tuple[Any, str]] = []

    def ask(run: Any, reason: str) -> bool:
        asked.append((run, reason))
        return answers.pop(0)

    def body(client: anthropic.Anthropic) -> None:
        ae.checkpoint({"at": 0})
        progress_chat(client, [0.2, None, 0.2, None, None, None, None, None, None])

    _, stopped, sent = run_guarded(path, [Watchdog(3, ask=ask)], body=body)
    # 1 call with progress, 3 without (0.2 again is no progress), then ask: go on; 3 more, ask: stop.
    assert sent == 7
    assert isinstance(stopped, RunStopped)
    assert stopped.status == "stalled"
    assert stopped.guard == "watchdog"
    assert [run.path for run, _ in asked] == [path, path]
    assert asked[0][1] == "3 model calls without verified progress; progress so far: 0.2"
    events = events_of(path)
    watch = [e for e in events if e["type"] in ("watchdog", "guard")]
    assert [(e["type"], e["action"]) for e in watch] == [
        ("watchdog", "ask"),
        ("watchdog", "continue"),
        ("watchdog", "ask"),
        ("guard", "stop"),
    ]
    assert watch[0]["calls_without_progress"] == 3
    assert watch[0]["progress"] == 0.2
    assert watch[0]["last_checkpoint"] == 1  # the checkpoint a resume would start from
    assert watch[0]["step"] == 4
    assert watch[2]["step"] == 7
    assert watch[3]["status"] == "stalled"
    assert events[-1]["status"] == "stalled"


def test_without_an_answer_the_watchdog_stops(tmp_path: Path) -> None:
    path = tmp_path / "noanswer.trace.jsonl"
    done, caught, sent = run_guarded(path, [Watchdog(2)], turns=5)
    assert (done, sent) == (2, 2)
    assert isinstance(caught, RunStopped)
    assert caught.status == "stalled"


def test_progress_resets_the_watchdog_and_passing_checks_without_progress_count(tmp_path: Path) -> None:
    path = tmp_path / "progress.trace.jsonl"
    with SimServer(replies(), seed=1) as sim, ae.Recorder(path, guards=[Watchdog(2)]):
        client = client_for(sim)
        for i in range(4):
            chat(client, 2)
            ae.verification(f"check {i}", True)  # a newly passing check is progress
    assert events_of(path)[-1]["status"] == "ok"


def test_expect_progress_grants_grace_for_long_work(tmp_path: Path) -> None:
    path = tmp_path / "grace.trace.jsonl"
    left: list[int | None] = []

    def body(client: anthropic.Anthropic) -> None:
        chat(client, 1)
        ae.expect_progress(within=5, reason="a long build")
        left.append(ae.budget_left().calls_until_stall)
        chat(client, 5)  # would have stalled at the third call
        chat(client, 1)

    _, stopped, sent = run_guarded(path, [Watchdog(2)], body=body)
    assert isinstance(stopped, RunStopped)
    assert sent == 6
    assert left == [5]
    events = events_of(path)
    expect = next(e for e in events if e["type"] == "watchdog")
    assert (expect["action"], expect["within"], expect["reason"]) == ("expect", 5, "a long build")
    ask = [e for e in events if e["type"] == "watchdog"][1]
    assert ask["action"] == "ask"
    assert "(after expect_progress: a long build)" in ask["reason"]


def test_expect_progress_as_a_block_ends_its_grace_at_the_block_end(tmp_path: Path) -> None:
    path = tmp_path / "block.trace.jsonl"
    left: list[int | None] = []

    def body(client: anthropic.Anthropic) -> None:
        with ae.expect_progress(within=10, reason="checking everything"):
            chat(client, 4)
        left.append(ae.budget_left().calls_until_stall)  # the normal window, from the block's end
        chat(client, 3)

    _, stopped, sent = run_guarded(path, [Watchdog(2)], body=body)
    assert isinstance(stopped, RunStopped)
    assert sent == 6
    assert left == [2]


def test_expect_progress_is_harmless_without_a_watchdog_and_checks_its_arguments() -> None:
    with ae.expect_progress(within=3, reason="nothing records"):
        pass
    with pytest.raises(ValueError, match="within >= 1"):
        ae.expect_progress(within=0, reason="x")
    with pytest.raises(ValueError, match="needs a reason"):
        ae.expect_progress(within=2, reason=" ")


def test_a_watchdog_hook_that_raises_ends_the_run_as_error_with_its_traceback(tmp_path: Path) -> None:
    path = tmp_path / "buggy.trace.jsonl"

    def buggy_hook(run: Any, reason: str) -> bool:
        raise KeyError("no such run")

    done, caught, sent = run_guarded(path, [Watchdog(2, ask=buggy_hook)], turns=4)
    assert (done, sent) == (2, 2)
    assert isinstance(caught, GuardError)
    assert not isinstance(caught, anthropic.APIConnectionError)
    assert "the watchdog guard failed: KeyError" in str(caught)
    events = events_of(path)  # still readable, and valid
    failure = guard_events(events)[0]
    assert failure["action"] == "error"
    assert failure["status"] == "error"
    assert "buggy_hook" in failure["traceback"]
    end = events[-1]
    assert end["status"] == "error"
    assert end["error"]["type"] == "KeyError"
    assert "buggy_hook" in end["error"]["traceback"]


def test_a_guard_that_fails_at_start_refuses_the_run_cleanly(tmp_path: Path) -> None:
    class Broken(ae.Guard):
        name = "broken"

        def start(self, run: Any) -> Ruling | None:
            raise RuntimeError("cannot start")

    path = tmp_path / "broken.trace.jsonl"
    recorder = ae.Recorder(path, guards=[Broken()])
    with pytest.raises(GuardError, match="broken guard failed: RuntimeError"):
        recorder.start()
    events = events_of(path)
    assert kinds(events) == ["run_start", "guard", "run_end"]
    assert events[-1]["status"] == "error"
    assert current_recorder() is None


def test_a_user_guard_can_warn_and_stop(tmp_path: Path) -> None:
    class NoHaiku(ae.Guard):
        name = "no-haiku"

        def before_call(self, call: Any) -> Ruling | None:
            if call.index == 2:
                return Ruling.warn("second call", seen=call.index)
            if call.index == 3:
                return Ruling.stop("escalated", "a person must look", fix="ask the on-call")
            return None

    path = tmp_path / "user.trace.jsonl"
    done, caught, _ = run_guarded(path, [NoHaiku()], turns=5)
    assert done == 2
    assert isinstance(caught, RunStopped)
    assert caught.status == "escalated"
    assert str(caught).endswith("(ask the on-call)")
    events = guard_events(events_of(path))
    assert [(e["action"], e.get("status")) for e in events] == [("warn", None), ("stop", "escalated")]
    assert events[0]["seen"] == 2


def test_budget_values_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"RunBudget\(max_callz=\.\.\.\): unknown budget key"):
        RunBudget(max_callz=3)
    with pytest.raises(ConfigError, match="below 0"):
        RunBudget(max_tokens=-1)
    with pytest.raises(ConfigError, match="not a whole number"):
        RunBudget(max_calls=2.5)
    with pytest.raises(ValueError, match="within >= 1"):
        Watchdog(0)


# -- the loop guard -------------------------------------------------------------------------------

COUNTER = {"n": 0}


@ae.tool
def look(path: str) -> str:
    return f"contents of {path}"


@ae.tool
def flaky_fetch(url: str) -> str:
    COUNTER["n"] += 1
    raise ConnectionError(f"attempt {COUNTER['n']}: connection refused")  # a new message each time


def tool_harness(client: anthropic.Anthropic, tools: dict[str, Callable[..., Any]], turns: int = 12) -> None:
    """A minimal agent loop: call the model, run the tool it asks for, send the result back."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for _ in range(turns):
        message = client.messages.create(model=MODEL, max_tokens=64, messages=messages)
        messages.append(
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
        )
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            return
        results = []
        for use in uses:
            try:
                output, failed = tools[use.name](**use.input), False
            except Exception as exc:
                output, failed = str(exc), True
            results.append(
                {"type": "tool_result", "tool_use_id": use.id, "content": output, "is_error": failed}
            )
        messages.append({"role": "user", "content": results})


@pytest.mark.parametrize(
    ("rule", "script", "stopped_after"),
    [
        ("repeat", [Reply.tool_use("look", {"path": "a.txt"})] * 8, 3),
        ("failing_repeat", [Reply.tool_use("flaky_fetch", {"url": "http://x"})] * 8, 3),
        (
            "alternation",
            [Reply.tool_use("look", {"path": p}) for p in ("a.txt", "b.txt") * 4],
            6,
        ),
    ],
)
def test_the_loop_guard_stops_each_kind_of_loop(
    tmp_path: Path, rule: str, script: list[Reply], stopped_after: int
) -> None:
    path = tmp_path / f"{rule}.trace.jsonl"
    tools = {"look": look, "flaky_fetch": flaky_fetch}
    guards = guards_for(Budget(loop_repeat=3))  # the others default to 3 too
    done, caught, sent = run_guarded(path, guards, script=script, body=lambda c: tool_harness(c, tools))
    assert isinstance(caught, RunStopped)
    assert caught.status == "loop"
    assert caught.guard == "loop"
    assert caught.reason.startswith(f"{rule}: ")
    assert sent == done == stopped_after  # the loop's last tool call ran; the next request never left
    events = events_of(path)
    assert events[0]["budget"] == {"loop_repeat": 3, "loop_failing_repeat": 3, "loop_alternation": 3}
    stop = guard_events(events)[0]
    assert (stop["rule"], stop["status"]) == (rule, "loop")
    tool_seqs = [e["seq"] for e in events if e["type"] == "tool_call"]
    assert stop["seqs"] == tool_seqs[-len(stop["seqs"]) :]
    assert events[-1]["status"] == "loop"


def test_the_loop_guard_finds_loops_in_runs_without_recorded_tools(tmp_path: Path) -> None:
    path = tmp_path / "untooled.trace.jsonl"
    plain = {"look": lambda path: f"contents of {path}"}  # no @tool: actions come from the model calls
    script = [Reply.tool_use("look", {"path": "a.txt"})] * 8
    done, caught, _ = run_guarded(
        path, guards_for(Budget(loop_repeat=3)), script=script, body=lambda c: tool_harness(c, plain)
    )
    assert isinstance(caught, RunStopped)
    assert caught.status == "loop"
    # The third result reaches the trace with the fourth request: found there, the fifth never left.
    assert done == 4


def test_a_loop_rule_at_zero_is_off(tmp_path: Path) -> None:
    path = tmp_path / "off.trace.jsonl"
    script = [Reply.tool_use("look", {"path": "a.txt"})] * 5 + [Reply.text("done")]
    guards = guards_for(Budget(loop_repeat=0, loop_alternation=0, loop_failing_repeat=0))
    done, caught, _ = run_guarded(path, guards, script=script, body=lambda c: tool_harness(c, {"look": look}))
    assert caught is None
    assert done == 6
    with pytest.raises(ConfigError, match="1 is no loop"):
        Budget.parse("[tool.agentevals.budget]", {"loop_repeat": 1})
