"""Correlation (issue 31): each model call keeps the API's `request-id` and the request's
`traceparent`, and `agentevals show` and the report's transcript name them, so a production span or
a support ticket finds its recorded exchange."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic

import pytest_agentevals as ae
from pytest_agentevals.report.transcript import items_of
from pytest_agentevals.sim import SimServer

from ..conftest import run_agentevals
from .concurrent_support import MODEL, echo

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def test_request_ids_and_traceparents_are_kept_and_shown(tmp_path: Path, fake_api_key: str) -> None:
    store = ae.RunStore(tmp_path / "runs")
    with SimServer(echo, seed=33) as sim, store.run("ticket-7", agent="svc") as recorder:
        client = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key, max_retries=0)
        for n, headers in enumerate([{"traceparent": TRACEPARENT}, {}]):
            client.messages.create(
                model=MODEL,
                max_tokens=16,
                messages=[{"role": "user", "content": f"call {n}"}],
                extra_headers=headers,
            )
        sent = [exchange.request.headers.get("traceparent") for exchange in sim.exchanges]
    trace = recorder.path
    calls = [e for e in ae.read_trace(trace) if e["type"] == "model_call"]
    assert calls[0]["traceparent"] == TRACEPARENT
    assert "traceparent" not in calls[1]  # none sent, none invented
    ids = [call["request_id"] for call in calls]
    assert all(isinstance(i, str) and i for i in ids)
    assert ids == [call["response"]["headers"]["request-id"] for call in calls]
    assert sent == [TRACEPARENT, None]  # what the caller sent reached the API as sent

    shown = run_agentevals("show", trace, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "session ticket-7" in shown.stdout
    assert f"request-id {ids[0]} · trace {TRACE_ID}" in shown.stdout
    assert f"request-id {ids[1]}" in shown.stdout
    as_json = json.loads(run_agentevals("show", trace, "--format", "json", cwd=tmp_path).stdout)
    assert [c.get("request_id") for c in as_json["correlation"]] == ids
    assert as_json["correlation"][0]["traceparent"] == TRACEPARENT

    titles = [item.title for item in items_of(ae.read_trace(trace)) if item.kind == "model_call"]
    assert f"request-id {ids[0]}" in titles[0]
    assert f"trace {TRACE_ID}" in titles[0]
    assert "trace " not in titles[1].split("request-id")[1]
