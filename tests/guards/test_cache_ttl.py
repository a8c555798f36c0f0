"""Cache writes priced by their lifetime: 5-minute writes at 1.25x input, 1-hour writes at 2x.

The API reports the two kinds apart (`usage.cache_creation.ephemeral_5m_input_tokens` and
`ephemeral_1h_input_tokens`); the simulated server does the same when a request asks for a `ttl`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

import pytest_agentevals as ae
from pytest_agentevals.guards import RunBudget, RunStopped
from pytest_agentevals.guards.prices import PriceTable
from pytest_agentevals.metrics import compute
from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.trace.render import summary_text
from pytest_agentevals.trace.summary import summarize

from ..guard_support import MODEL, Spy, events_of

# claude-sonnet-4-6, USD per million tokens, by hand: input 3, output 15, 5-minute write 3.75
# (1.25x), 1-hour write 6.00 (2x), read 0.30.
RATES = {"in": 3.0, "out": 15.0, "w5m": 3.75, "w1h": 6.0, "read": 0.30}
SYSTEM = [
    {
        "type": "text",
        "text": "You follow the house rules. " * 60,
        "cache_control": {"type": "ephemeral", "ttl": "1h"},
    }
]


def _turns(client: anthropic.Anthropic, turns: int, stream: bool) -> list[Any]:
    """A conversation with a 1-hour marker on the system prompt and a 5-minute one on the newest
    block: each call writes both kinds (the first) or reads the old prefix and writes a 5m part."""
    messages: list[dict[str, Any]] = []
    usages = []
    for turn in range(turns):
        for message in messages:
            for block in message["content"]:
                block.pop("cache_control", None)
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"question {turn} " * 30, "cache_control": {"type": "ephemeral"}}
                ],
            }
        )
        kwargs: dict[str, Any] = {"model": MODEL, "max_tokens": 50, "system": SYSTEM, "messages": messages}
        if stream:
            with client.messages.stream(**kwargs) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        usages.append(message.usage)
        messages.append({"role": "assistant", "content": [{"type": "text", "text": message.content[0].text}]})  # type: ignore[union-attr]
    return usages


def _by_hand(usage: Any) -> float:
    split = usage.cache_creation
    return (
        usage.input_tokens * RATES["in"]
        + usage.output_tokens * RATES["out"]
        + split.ephemeral_5m_input_tokens * RATES["w5m"]
        + split.ephemeral_1h_input_tokens * RATES["w1h"]
        + usage.cache_read_input_tokens * RATES["read"]
    ) / 1e6


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_mixed_5m_and_1h_writes_are_priced_at_their_rates(
    tmp_path: Path, fake_api_key: str, stream: bool
) -> None:
    path = tmp_path / "ttl.trace.jsonl"
    spy, budget = Spy(), RunBudget(max_cost_usd=10.0)
    with SimServer(lambda request: Reply.text("noted, " * 8)) as sim, ae.Recorder(path, guards=[spy, budget]):
        usages = _turns(anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key), 3, stream)
    first = usages[0].cache_creation
    assert first.ephemeral_1h_input_tokens > 0  # both kinds in one call
    assert first.ephemeral_5m_input_tokens > 0
    assert usages[1].cache_read_input_tokens > 0
    calls = [e for e in events_of(path) if e["type"] == "model_call"]
    hand = [_by_hand(u) for u in usages]
    assert [c["cost_usd"] for c in calls] == pytest.approx(hand, rel=1e-9)
    # The old single rate would have under-billed the 1-hour part by (2 - 1.25) x input.
    old = PriceTable().cost(MODEL, _unsplit(calls[0]["usage"]))
    assert old is not None
    assert hand[0] - old == pytest.approx(
        first.ephemeral_1h_input_tokens * (RATES["w1h"] - RATES["w5m"]) / 1e6
    )
    # The trace keeps the split, and the budgets count the true cost.
    assert calls[0]["usage"]["ephemeral_1h_input_tokens"] == first.ephemeral_1h_input_tokens
    assert calls[0]["usage"]["ephemeral_5m_input_tokens"] == first.ephemeral_5m_input_tokens
    assert [result.cost_usd for _, result in spy.results] == pytest.approx(hand, rel=1e-9)  # type: ignore[union-attr]
    assert budget.cost_usd == pytest.approx(sum(hand), rel=1e-9)
    summary = summarize(path)
    assert summary.cost_usd == pytest.approx(sum(hand), abs=1e-6)
    text = summary_text(summary)
    w5 = sum(u.cache_creation.ephemeral_5m_input_tokens for u in usages)
    w1 = sum(u.cache_creation.ephemeral_1h_input_tokens for u in usages)
    assert f"cache write {w5 + w1:,} (5m {w5:,} · 1h {w1:,})" in text
    assert "5-minute rate" not in text


def _unsplit(usage: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in usage.items() if not k.startswith("ephemeral_")}


def test_a_budget_stops_on_the_true_cost_of_1h_writes(tmp_path: Path, fake_api_key: str) -> None:
    """A budget that the 5-minute price of the first call's 1-hour writes would have let through."""
    spy = Spy()
    with (
        SimServer(lambda request: Reply.text("ok")) as sim,
        ae.Recorder(tmp_path / "free.trace.jsonl", guards=[spy]),
    ):
        usages = _turns(anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key), 2, False)
    true_cost = _by_hand(usages[0])
    old_cost = (
        true_cost - usages[0].cache_creation.ephemeral_1h_input_tokens * (RATES["w1h"] - RATES["w5m"]) / 1e6
    )
    reserve = spy.calls[1].cost_usd  # what the second call reserves before it is sent
    assert reserve is not None
    # Spent after one call + the second's reservation: over this at the true cost, under it at the old.
    limit = old_cost + reserve + (true_cost - old_cost) / 2
    path = tmp_path / "guarded.trace.jsonl"
    budget = RunBudget(max_cost_usd=limit)
    with SimServer(lambda request: Reply.text("ok")) as sim:
        client = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key, max_retries=0)
        with pytest.raises(RunStopped), ae.Recorder(path, guards=[budget]):
            _turns(client, 2, False)
        assert len(sim.requests) == 1
    assert budget.cost_usd == pytest.approx(true_cost, rel=1e-9)
    events = events_of(path)
    assert events[-1]["status"] == "budget_exhausted"
    assert events[-1]["totals"]["cost_usd"] == pytest.approx(true_cost, rel=1e-6)
    # The metrics name the budget that stopped it (what a marathon verdict shows for the seed).
    assert compute(events).budget_stop == f"max_cost_usd={limit:g}"


def test_an_old_trace_without_the_split_is_priced_at_the_5m_rate_and_says_so(tmp_path: Path) -> None:
    usage = {
        "input_tokens": 100,
        "output_tokens": 10,
        "cache_creation_input_tokens": 1000,
        "cache_read_input_tokens": 0,
    }
    assert PriceTable().cost(MODEL, usage) == pytest.approx((100 * 3 + 10 * 15 + 1000 * 3.75) / 1e6)
    path = tmp_path / "old.trace.jsonl"
    with ae.Recorder(path, agent="old", seed=1):
        pass
    lines = path.read_text().splitlines()
    call = {
        "type": "model_call",
        "seq": 1,
        "t": 0.1,
        "step": 1,
        "provider": "anthropic",
        "model": MODEL,
        "stream": False,
        "request": {"method": "POST", "url": "http://x/v1/messages", "headers": {}, "body": {}},
        "response": {"status": 200, "headers": {}, "json": {}},
        "latency_ms": 1.0,
        "usage": usage,
        "cost_usd": PriceTable().cost(MODEL, usage),
    }
    path.write_text("\n".join([lines[0], json.dumps(call), *lines[1:]]) + "\n")
    text = summary_text(summarize(path))
    assert "cache write 1,000 (no 5m/1h split recorded: priced at the 5-minute rate)" in text


def test_metrics_and_the_report_show_both_kinds(tmp_path: Path, fake_api_key: str) -> None:
    from pytest_agentevals.metrics import RunMetrics
    from pytest_agentevals.metrics.render import text
    from pytest_agentevals.report.header import metric_rows

    path = tmp_path / "shown.trace.jsonl"
    with SimServer(lambda request: Reply.text("ok")) as sim, ae.Recorder(path):
        usages = _turns(anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key), 2, False)
    w5 = sum(u.cache_creation.ephemeral_5m_input_tokens for u in usages)
    w1 = sum(u.cache_creation.ephemeral_1h_input_tokens for u in usages)
    metrics = compute(ae.read_trace(path))
    assert metrics.cache_writes == {"5m": w5, "1h": w1, "unsplit": 0}
    assert f"cache writes 5m {w5:,} · 1h {w1:,} ·" in text(metrics)
    rows = {name: value for _, name, _, value in metric_rows(metrics)}
    assert rows["cache_writes"] == f"5m {w5:,} · 1h {w1:,}"
    # Metrics stored before the split was counted still load, and say they do not know it.
    stored = metrics.to_json()
    del stored["cache_writes"]
    old = RunMetrics.from_json(stored)
    assert old.cache_writes is None
    assert {name: value for _, name, _, value in metric_rows(old)}["cache_writes"].startswith(
        "— (not counted"
    )
