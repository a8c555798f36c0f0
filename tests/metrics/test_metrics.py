"""The metrics: each on hand-made traces with known answers, then their invariants with Hypothesis,
then on real traces (the example agent and the SDK against the simulated server) and in `show`."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_agentevals as ae
from pytest_agentevals.metrics import (
    LoopDetector,
    RunMetrics,
    analyze,
    cache_hit_rate,
    compute,
    compute_file,
    cost_per_verified_pass,
)
from pytest_agentevals.metrics.render import text
from pytest_agentevals.sim import Fault, Reply, SimServer
from pytest_agentevals.trace.reader import TornTraceWarning
from pytest_agentevals.trace.summary import summarize
from pytest_agentevals.trace.writer import TraceWriter

from ..conftest import run_agentevals
from ..metrics_support import Run

# -- verified pass and claims ----------------------------------------------------------------------


def test_verified_pass_needs_full_progress_from_a_passing_check() -> None:
    events = Run().call().verify(0.5).call().verify(1.0).call().end("ok")
    m = compute(events)
    assert m.verified_pass
    assert m.verified_at_step == 2
    assert m.claimed
    assert not m.false_claim
    assert (m.progress_start, m.progress_end, m.verified_gain) == (0.0, 1.0, 1.0)


def test_ending_ok_without_full_verified_progress_is_a_false_claim() -> None:
    m = compute(Run().call().verify(0.5).call().verify(0.2, passed=False).end("ok"))
    assert not m.verified_pass
    assert m.false_claim
    assert not m.unverified
    assert m.verifications == 2
    assert "FALSE CLAIM" in text(m)
    assert m.progress_end == 0.5  # max so far: the later failing check takes nothing back
    # Not claimed, not false: a run that says it ran out of budget.
    m = compute(Run().call().verify(0.5).end("budget_exhausted"))
    assert (m.claimed, m.false_claim) == (False, False)


def test_a_failing_check_reporting_full_progress_is_no_pass_and_thirds_add_up_to_one() -> None:
    assert not compute(Run().call().verify(1.0, passed=False).end("ok")).verified_pass
    thirds = Run().call().verify(1 / 3).call().verify(1 / 3 + 1 / 3).call().verify(1 / 3 + 1 / 3 + 1 / 3)
    assert compute(thirds.end()).verified_pass


def test_checks_without_progress_are_all_or_nothing() -> None:
    assert compute(Run().call().verify(passed=False).call().verify(passed=True).end()).verified_pass
    m = compute(Run().call().verify(passed=False).end())
    assert (m.verified_pass, m.progress_end) == (False, 0.0)


# -- progress-AUC and the longest stretch without progress -----------------------------------------


def auc_run(budget: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Progress 0.5 at step 2 and 1.0 (a pass) at step 6, in a run of 8 steps."""
    run = Run(budget=budget).call().call().verify(0.5).calls(3).call().verify(1.0).calls(2)
    return run.end("ok")


def test_auc_over_a_given_budget_carries_progress_past_the_run() -> None:
    m = compute(auc_run(), step_budget=10)
    # steps 1: 0, 2-5: 0.5, 6-10: 1.0 (the run ended at 8; its progress carries forward)
    assert m.progress_auc == pytest.approx((0 + 4 * 0.5 + 5 * 1.0) / 10)
    assert (m.step_budget, m.step_budget_source) == (10, "argument")


def test_auc_budget_from_the_trace_else_the_runs_own_steps() -> None:
    recorded = compute(auc_run(budget={"max_calls": 10, "max_cost_usd": 1.0}))
    assert (recorded.step_budget, recorded.step_budget_source) == (10, "trace")
    assert recorded.progress_auc == pytest.approx(0.7)
    own = compute(auc_run())
    assert (own.step_budget, own.step_budget_source) == (8, "run")
    assert own.progress_auc == pytest.approx((0 + 4 * 0.5 + 3 * 1.0) / 8)
    # A budget smaller than the run: the AUC looks at the budget's steps only.
    assert compute(auc_run(), step_budget=4).progress_auc == pytest.approx((0 + 3 * 0.5) / 4)


def test_longest_stretch_without_progress_stops_at_the_verified_pass() -> None:
    m = compute(auc_run())
    # Progress rose at steps 2 and 6 (the pass): stretches [1], [3-5]; nothing counts after the pass.
    assert (m.longest_no_progress, m.longest_no_progress_from) == (3, 3)
    unfinished = Run().call().call().verify(0.5).calls(3).call().verify(0.9).calls(4).end("failed")
    m = compute(unfinished)
    assert (m.longest_no_progress, m.longest_no_progress_from) == (4, 7)


def test_stored_metrics_load_back() -> None:
    stored = compute(auc_run()).to_json()
    with pytest.raises(ValueError, match="lack progress_auc"):
        RunMetrics.from_json({k: v for k, v in stored.items() if k != "progress_auc"})
    assert RunMetrics.from_json({**stored, "added_later": 1}) == compute(auc_run())
    # Metrics stored before `verifications` and `unverified` were measured still load.
    older = {k: v for k, v in stored.items() if k not in ("verifications", "unverified")}
    assert RunMetrics.from_json(older).progress_auc == stored["progress_auc"]


def test_a_run_without_model_calls_or_verifications() -> None:
    m = compute(Run().verify(1.0).end("ok"))
    assert (m.steps, m.step_budget, m.progress_auc, m.verified_pass) == (0, 0, 1.0, True)
    m = compute(Run().end("ok"))
    # No verification is no evidence: unverified, never a false claim.
    assert (m.progress_auc, m.verified_pass, m.false_claim, m.unverified) == (0.0, False, False, True)
    assert "no verdict" in text(m)  # no model call: nothing the agent did to judge
    assert "FALSE CLAIM" not in text(m)
    called = compute(Run().call().end("ok"))
    assert called.unverified
    assert "unverified" in text(called)
    assert "FALSE CLAIM" not in text(called)
    assert (m.loop_rate, m.cache_hit_rate, m.peak_context_pressure, m.cost_per_verified_pass) == (
        None,
        None,
        None,
        None,
    )
    assert m.longest_no_progress == 0


# -- loops -----------------------------------------------------------------------------------------


def test_loop_rate_is_the_share_of_actions_inside_loops() -> None:
    run = Run().call().tool("read", path="a").tool("read", path="a").tool("read", path="a")
    run.tool("read", path="a").call().tool("write", path="b")
    m = compute(run.end())
    assert (m.actions, m.looped_actions, m.loop_rate) == (5, 4, 0.8)
    assert m.loops == {"repeat": 1, "failing_repeat": 0, "alternation": 0}
    # Stricter thresholds, through the detector handed in: no loop.
    assert compute(run.events, loops=LoopDetector(repeat=5)).loop_rate == 0.0


# -- spend, context, weather -----------------------------------------------------------------------


def test_tokens_cost_cache_hit_rate_and_cost_per_verified_pass() -> None:
    run = Run().call(input=100, write=200, read=700, output=50, cost=0.01)
    run.failed_call(429).failed_call(529).failed_call(500)
    run.call(input=10, read=990, output=5, cost=0.002).verify(1.0)
    m = compute(run.end("ok"))
    assert m.tokens == {
        "input_tokens": 110,
        "output_tokens": 55,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 1690,
    }
    assert m.cost_usd == pytest.approx(0.012)
    assert m.cache_hit_rate == pytest.approx(1690 / 2000)
    assert m.cost_per_verified_pass == pytest.approx(0.012)
    # Weather is counted apart from the errors.
    assert (m.model_calls, m.steps, m.rate_limited, m.overloaded, m.model_errors) == (5, 2, 1, 1, 1)


def test_cost_per_verified_pass_is_none_not_infinite_and_unknown_prices_are_not_zero() -> None:
    assert compute(Run().call(cost=0.5).verify(0.5).end()).cost_per_verified_pass is None
    unpriced = compute(Run().call(model="my-finetune", cost=None).verify(1.0).end())
    assert unpriced.verified_pass
    assert unpriced.cost_per_verified_pass is None
    assert unpriced.unpriced_models == ["my-finetune"]
    assert cost_per_verified_pass(3.0, 0) is None
    assert cost_per_verified_pass(3.0, 2) == 1.5  # a marathon's seeds: total cost over passes
    assert cache_hit_rate({}) is None


def test_peak_context_pressure_by_model_window_with_overrides() -> None:
    run = Run().call(input=20_000, write=30_000, read=50_000).call(model="my-finetune", input=90_000)
    m = compute(run.end())
    assert (m.peak_context_tokens, m.peak_context_pressure, m.peak_context_step) == (100_000, 0.5, 1)
    assert m.unknown_windows == ["my-finetune"]
    m = compute(run.events, context_windows={"my-": 100_000})
    assert (m.peak_context_pressure, m.peak_context_step, m.unknown_windows) == (0.9, 2, [])
    with pytest.raises(ValueError, match="context window of 'x'"):
        compute(run.events, context_windows={"x": 0})


# -- incidents -------------------------------------------------------------------------------------


def test_harness_incidents_are_counted_from_events_and_notes() -> None:
    run = Run().call().checkpoint().compaction().note("watchdog fired", reason="stuck", action="nudge")
    run.watchdog().watchdog(action="continue").watchdog(action="expect")
    run.note("restarting from the last checkpoint", reason="crash").note("restart?")
    run.note("giving up", action="restart").note("replay divergence", kind="model")
    run.guard("cost", "stop", "budget_exhausted", "spent $3.01 of $3.00").guard("loop", "warn", "loop", "x")
    run.note("token budget exhausted").note("just a note")
    m = compute(run.end("budget_exhausted", error={"type": "BudgetExhausted", "message": "spent"}))
    assert (m.checkpoints, m.compactions, m.watchdog_fires, m.restarts) == (1, 1, 2, 3)
    assert (m.divergences, m.budget_stops, m.guard_events) == (1, 2, {"stop": 1, "warn": 1})
    assert m.crashed
    assert m.status == "budget_exhausted"


# -- slices ----------------------------------------------------------------------------------------


def slice_run() -> list[dict[str, Any]]:
    run = Run().call(input=1, cost=0.1).verify(0.2).call(input=2, cost=0.1).tool("a")
    run.call(input=4, cost=0.1).verify(0.5).checkpoint().failed_call(429).call(input=8, cost=0.1)
    run.tool("b").call(input=16, cost=0.1).verify(1.0)
    return run.end("ok")


def test_a_slice_of_a_run() -> None:
    m = compute(slice_run(), steps=(2, 4))
    assert m.tokens["input_tokens"] == 2 + 4 + 8
    assert (m.steps, m.model_calls, m.rate_limited, m.tool_calls, m.checkpoints) == (3, 4, 1, 2, 1)
    assert (m.progress_start, m.progress_end, m.verified_gain) == (0.2, 0.5, pytest.approx(0.3))
    # The slice's AUC over its own three steps: 0.2 at step 2, then 0.5.
    assert (m.step_budget, m.step_budget_source) == (3, "slice")
    assert m.progress_auc == pytest.approx((0.2 + 0.5 + 0.5) / 3)
    assert (m.status, m.complete, m.verified_pass, m.false_claim) == (None, False, False, False)
    # Verified before any model call: inside a slice from step 0, carried into one from step 1.
    early = Run().verify(0.4).call().verify(0.6).end()
    assert (compute(early, steps=(0, 1)).progress_start, compute(early, steps=(1, 1)).progress_start) == (
        0,
        0.4,
    )
    tail = compute(slice_run(), steps=(5, None))
    assert (tail.status, tail.complete, tail.verified_pass, tail.steps) == ("ok", True, True, 1)
    with pytest.raises(ValueError, match="after the last"):
        compute(slice_run(), steps=(4, 2))


def test_progress_already_made_before_a_resumed_run() -> None:
    m = compute(Run().call().verify(0.7).call().end(), progress_start=0.6)
    assert (m.progress_start, m.progress_end) == (0.6, 0.7)
    assert m.verified_gain == pytest.approx(0.1)
    assert m.progress_auc == pytest.approx((0.7 + 0.7) / 2)


# -- the series a report draws ---------------------------------------------------------------------


def test_series_for_the_report() -> None:
    run = Run(budget={"max_calls": 5}).call(input=100, read=100, output=10, cost=0.01).verify(0.5)
    run.tool("read", path="x").tool("read", path="x").tool("read", path="x").compaction()
    run.failed_call(529).call(input=50, output=5, cost=0.02).verify(1.0)
    metrics, series = analyze(run.end("ok"))
    assert metrics == compute(run.events)
    data = series.to_json()
    assert data["calls"]["step"] == [1, 2]
    assert data["calls"]["context_tokens"] == [200, 50]
    assert data["calls"]["context_pressure"] == [200 / 200_000, 50 / 200_000]
    assert data["calls"]["cumulative_cost_usd"] == [0.01, 0.03]
    assert data["progress"]["progress"] == [0.5, 1.0]
    assert [(m["kind"], m["step"]) for m in data["markers"]] == [("loop", 1), ("compaction", 1), ("retry", 2)]
    assert data["budget"] == {"max_calls": 5}
    json.dumps(data)  # embeddable as it is


# -- invariants ------------------------------------------------------------------------------------

ITEMS = st.one_of(
    st.tuples(st.just("call"), st.integers(0, 5_000), st.integers(0, 5_000), st.integers(0, 100)),
    st.tuples(st.just("fail"), st.sampled_from([429, 529, 500])),
    st.tuples(st.just("tool"), st.sampled_from(["a", "b", "c"]), st.booleans()),
    st.tuples(st.just("verify"), st.floats(0, 1), st.booleans()),
    st.tuples(st.just("note"), st.sampled_from(["restarting", "watchdog fired", "hello"])),
)


def build(items: list[tuple[Any, ...]], status: str | None = "ok") -> list[dict[str, Any]]:
    run = Run()
    for item in items:
        if item[0] == "call":
            run.call(input=item[1], read=item[2], output=item[3], cost=(item[1] + item[3]) / 1e6)
        elif item[0] == "fail":
            run.failed_call(item[1])
        elif item[0] == "tool":
            run.tool(item[1], error="boom" if item[2] else None, path=item[1])
        elif item[0] == "verify":
            run.verify(item[1], passed=item[2])
        else:
            run.note(item[1])
    return run.end(status) if status else run.events


@settings(max_examples=200, deadline=None)
@given(items=st.lists(ITEMS, max_size=60), budget=st.none() | st.integers(0, 80))
def test_metrics_stay_within_their_ranges(items: list[tuple[Any, ...]], budget: int | None) -> None:
    m = compute(build(items), step_budget=budget)
    assert 0.0 <= m.progress_auc <= 1.0
    assert m.loop_rate is None or 0.0 <= m.loop_rate <= 1.0
    assert 0 <= m.looped_actions <= m.actions
    assert m.cache_hit_rate is None or 0.0 <= m.cache_hit_rate <= 1.0
    assert m.cost_per_verified_pass is None or math.isfinite(m.cost_per_verified_pass)
    assert (m.cost_per_verified_pass is None) == (not m.verified_pass)
    # Every run here ends "ok": a false claim with a failing verification, unverified with none.
    assert m.false_claim == (not m.verified_pass and m.verifications > 0)
    assert m.unverified == (m.verifications == 0)
    assert 0 <= m.longest_no_progress <= m.steps
    assert RunMetrics.from_json(json.loads(json.dumps(m.to_json()))) == m


@settings(max_examples=200, deadline=None)
@given(items=st.lists(ITEMS, max_size=60), lift=st.floats(0, 1), budget=st.none() | st.integers(0, 80))
def test_auc_is_monotone_in_progress(items: list[tuple[Any, ...]], lift: float, budget: int | None) -> None:
    # Every verification reporting more progress (never less) cannot lower the AUC.
    raised = [
        ("verify", item[1] + (1 - item[1]) * lift, item[2]) if item[0] == "verify" else item for item in items
    ]
    before = compute(build(items), step_budget=budget).progress_auc
    after = compute(build(raised), step_budget=budget).progress_auc
    assert after >= before - 1e-12


@settings(max_examples=200, deadline=None)
@given(items=st.lists(ITEMS, max_size=60), cuts=st.lists(st.integers(1, 40), max_size=4))
def test_slices_of_a_partition_add_up_to_the_whole(items: list[tuple[Any, ...]], cuts: list[int]) -> None:
    events = build(items)
    whole = compute(events)
    bounds = sorted(set(cuts))
    edges = [None, *bounds]
    parts = [
        compute(events, steps=(None if start is None else start, None if end is None else end - 1))
        for start, end in zip(edges, [*bounds, None], strict=True)
    ]
    for kind, count in whole.tokens.items():
        assert sum(part.tokens[kind] for part in parts) == count
    assert sum(part.cost_usd for part in parts) == pytest.approx(whole.cost_usd)
    for name in ("steps", "model_calls", "rate_limited", "overloaded", "tool_calls", "restarts"):
        assert sum(getattr(part, name) for part in parts) == getattr(whole, name), name
    # The AUC is the same curve cut in pieces: step-weighted, the slices' AUCs make the whole's.
    if whole.step_budget:
        pieces = [(p.progress_auc, p.step_budget) for p in parts if p.step_budget and p.first_step != 0]
        covered = sum(length for _, length in pieces)
        if covered == whole.step_budget:
            total = sum(auc * length for auc, length in pieces)
            assert total / covered == pytest.approx(whole.progress_auc)


# -- real traces -----------------------------------------------------------------------------------


def test_a_torn_trace_is_measured_as_far_as_it_goes(tmp_path: Path) -> None:
    path = tmp_path / "torn.trace.jsonl"
    events = Run().call(input=5).verify(0.5).call(input=7).end("ok")
    with TraceWriter(path) as writer:
        for event in events[:-1]:
            writer.write(event)
    with path.open("a") as handle:
        handle.write('{"type": "run_end", "seq": 9, "t"')  # a crash mid-write
    with pytest.warns(TornTraceWarning):
        m = compute_file(path)
    assert (m.complete, m.status, m.steps, m.progress_end) == (False, None, 2, 0.5)
    assert m.tokens["input_tokens"] == 12
    assert not m.false_claim


def test_the_example_agent_its_own_bookkeeping_agrees(tmp_path: Path) -> None:
    from examples import taskrunner

    path = tmp_path / "stall.trace.jsonl"
    with ae.Recorder(path, agent="taskrunner", seed=3):
        result = taskrunner.run(8, seed=3, stall_at=5)
    m = compute_file(path)
    assert (m.status, m.steps, m.restarts, m.watchdog_fires) == (
        result.status,
        result.steps,
        result.restarts,
        result.watchdog_fires,
    )
    assert result.restarts >= 1  # the stall was caught, so there is something to count
    assert m.verified_pass == (result.tasks_done == result.tasks_total)
    assert m.tool_calls == len(result.tool_calls) == m.actions
    assert m.loops["failing_repeat"] + m.loops["repeat"] >= 1
    assert m.looped_actions >= 3
    summary = summarize(path)
    assert (m.tokens, m.checkpoints) == (summary.tokens, summary.checkpoints)


def test_retried_429_and_529_are_weather(tmp_path: Path, fake_api_key: str) -> None:
    script = [Fault.rate_limit(), Fault.overloaded(), Reply.text("hi"), Fault.error(500), Reply.text("bye")]
    path = tmp_path / "weather.trace.jsonl"
    with SimServer(script, seed=1) as sim, ae.Recorder(path):
        client = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key, max_retries=2)
        for _ in range(2):
            client.messages.create(
                model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": "go"}]
            )
    m = compute_file(path)
    assert (m.model_calls, m.steps, m.rate_limited, m.overloaded, m.model_errors) == (5, 2, 1, 1, 1)
    assert fake_api_key not in path.read_text()


def test_show_prints_the_metrics_and_json_includes_them(tmp_path: Path) -> None:
    path = tmp_path / "run.trace.jsonl"
    with TraceWriter(path) as writer:
        for event in auc_run():
            writer.write(event)
    shown = run_agentevals("show", path, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "metrics    verified pass at step 6" in shown.stdout
    assert "AUC 0.62 over 8 steps (the run's steps)" in shown.stdout
    as_json = run_agentevals("show", path, "--json", cwd=tmp_path)
    data = json.loads(as_json.stdout)
    assert data["metrics"] == json.loads(json.dumps(compute_file(path).to_json()))
    assert data["metrics"]["steps"] == data["steps"] == 8


def test_show_measures_a_trace_cut_off_mid_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.trace.jsonl"
    with TraceWriter(path) as writer:
        for event in auc_run()[:5]:
            writer.write(event)
    with path.open("a") as handle:
        handle.write("not json\n" + json.dumps(auc_run()[5]) + "\n")
    shown = run_agentevals("show", path, cwd=tmp_path)  # its exit code is the summary's business
    assert "bad.trace.jsonl:6: the line is not valid JSON" in shown.stdout
    assert "metrics    no verified pass (progress 50%)" in shown.stdout


# -- untrusted traces ------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
SSE_TYPES = (
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
)
SSE = st.lists(
    st.fixed_dictionaries(
        {
            "event": st.text(max_size=4),
            "data": st.fixed_dictionaries(
                {
                    "type": st.sampled_from(SSE_TYPES),
                    "index": JSON,
                    "message": JSON | st.just({"content": []}),
                    "content_block": JSON
                    | st.just({"type": "tool_use", "id": "t", "name": "x", "input": {}}),
                    "delta": JSON
                    | st.fixed_dictionaries({"type": st.just("input_json_delta"), "partial_json": JSON}),
                    "usage": JSON,
                }
            ),
        }
    )
    | JSON,
    max_size=6,
)


@st.composite
def crafted_events(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["model_call", "tool_call", "verification", "note", "guard", "watchdog"]))
    event: dict[str, Any] = {
        "type": kind,
        "seq": 1,
        "t": draw(st.floats(0, 9)),
        "step": draw(st.integers(0, 9)),
    }
    if kind == "model_call":
        response: dict[str, Any] = {"status": draw(st.sampled_from([200, 429, 500, 529]))}
        response["json" if draw(st.booleans()) else "sse"] = draw(JSON | SSE)
        event.update(
            provider=draw(st.sampled_from(["anthropic", "http"])),
            request={"body": draw(JSON)},
            response=response,
            usage=draw(JSON),
            cost_usd=draw(JSON),
            model=draw(JSON),
        )
    elif kind == "tool_call":
        event.update(name="t", input=draw(st.dictionaries(st.text(max_size=3), JSON)), duration_ms=1)
        event["output" if draw(st.booleans()) else "error"] = draw(JSON)
    elif kind == "verification":
        event.update(name="v", passed=draw(st.booleans()), progress=draw(JSON))
    else:
        event.update(
            message=draw(st.text(max_size=12)), data=draw(JSON), reason=draw(JSON), action=draw(JSON)
        )
        event.update(guard=draw(JSON), status=draw(JSON))
    return event


@settings(max_examples=300, deadline=None)
@given(events=st.lists(crafted_events(), max_size=12), end=JSON)
def test_a_crafted_trace_never_breaks_the_metrics(events: list[dict[str, Any]], end: Any) -> None:
    """Fields of the wrong shape (a trace arrives in a pull request) are skipped, never raised on."""
    run = (
        Run().events
        + events
        + [{"type": "run_end", "seq": 99, "t": 9.5, "status": "ok", "totals": {}, "error": end}]
    )
    for seq, event in enumerate(run[1:], start=1):
        event["seq"] = seq
    metrics, series = analyze(run)
    assert 0.0 <= metrics.progress_auc <= 1.0
    json.dumps(metrics.to_json())
    json.dumps(series.to_json())
