"""Traces for the run report's tests: one with every kind of marker, payloads that try to break out
of the page, and a writer for hand-made events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_agentevals.trace.events import Event

from .metrics_support import Run

# Text that would run script, load an image or end the data block if the page let it through.
PAYLOADS = (
    "</script><script>window.__xss = 'script'; alert(1)</script>",
    '<img src="x" onerror="window.__xss = \'img\'; alert(2)">',
    "<svg onload=\"window.__xss = 'svg'\"><script>alert(3)</script></svg>",
    "\u2028\u2029<!-- ]]> {{x}} ${x} -->",
)
PAYLOAD = " ".join(PAYLOADS)


def write(path: Path, events: list[Event]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    return path


def every_marker(budget: dict[str, Any] | None = None) -> list[Event]:
    """Eight steps with one of each marker kind: a checkpoint, a compaction (with its high-water
    mark), a retried 429, a guard's warning, a loop (the same call and result three times), a
    restart, a watchdog firing, a budget stop by a guard, a replay divergence, and a crash (run_end
    with an error)."""
    run = Run(
        budget=budget
        if budget is not None
        else {"max_calls": 10, "max_cost_usd": 0.2, "max_call_tokens": 6000}
    )
    usage = {"input": 120, "write": 300, "read": 1500, "output": 40, "cost": 0.01}
    run.call(**usage).tool("read_file", output="first file", path="a.txt").verify(0.25, name="a").checkpoint()
    run.call(**usage).tool("read_file", output="second file", path="b.txt").verify(0.5, name="b")
    run.failed_call(429)
    run.call(**{**usage, "read": 4800})._add(
        "compaction", tokens_before=5220, tokens_after=400, summary="kept the plan", high_water=5000
    )
    run.call(**usage)._add("guard", guard="budget", action="warn", reason="a call ten times the median")
    for _ in range(3):
        run.tool("run_tests", output="failed", module="c")
    run.verify(0.5, passed=False, name="c")
    run.note("restarting from the last checkpoint")
    run.call(**usage).watchdog("no verified progress for 2 calls", "ask")
    run.call(**usage).guard("budget", "stop", "budget_exhausted", "max_cost_usd 0.2 reached")
    run.note("replay divergence at call 7", reason="the request differs")
    run.call(**usage)
    return run.end(
        "error",
        error={"type": "RuntimeError", "message": "boom", "traceback": "Traceback...\nRuntimeError: boom"},
    )


def with_payloads() -> list[Event]:
    """A run whose every text field holds the payloads."""
    run = Run()
    run.events[0]["agent"] = "agent " + PAYLOAD
    run.events[0]["task"] = {"goal": PAYLOAD}
    run.call(content=[{"type": "text", "text": "answer " + PAYLOAD}], model="claude-" + PAYLOAD)
    run.tool("read_file", output="output " + PAYLOAD, path=PAYLOAD)
    run.verify(0.5, name="check " + PAYLOAD)
    run._add("checkpoint", state={"note": PAYLOAD}, name="checkpoint " + PAYLOAD)
    run.note("watchdog " + PAYLOAD, reason=PAYLOAD)
    run.call().tool("run", error="error " + PAYLOAD)
    return run.end("error", error={"type": PAYLOAD, "message": PAYLOAD})
