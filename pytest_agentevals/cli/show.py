"""`agentevals show TRACE`: a trace summarized for a person, or as JSON for a machine."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..metrics import MetricsScan, RunMetrics
from ..trace.summary import TraceSummary, summarize
from .common import add_format


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "show",
        help="summarize a trace: steps, calls, tokens, cost, how it ended",
        description="A ten-second summary of a recorded run: steps, model and tool calls, tokens, cost, "
        "harness events, verifications and how it ended, the run's metrics (docs/metrics.md), and any "
        "problem found in the file. Exit 1 when a line in the middle of the trace is damaged (what was "
        "read before it is still shown).",
    )
    parser.add_argument("trace", help="a .trace.jsonl file")
    add_format(parser, ("text", "json"))
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    scan = MetricsScan()
    summary = summarize(args.trace, observers=[scan.add])  # one read of the file for both
    metrics = scan.metrics()
    if args.format == "json":
        print(json.dumps({**summary.to_json(), "metrics": metrics.to_json()}, indent=2))
    else:
        print(render(summary) + "\n" + render_metrics(metrics))
    if summary.unreadable is not None:
        print(f"agentevals show: error: {summary.unreadable}", file=sys.stderr)
        return 1
    return 0


def render(s: TraceSummary) -> str:
    tokens = s.tokens
    verifications = s.verifications_passed + s.verifications_failed
    progress = f", progress {s.last_progress:.0%}" if s.last_progress is not None else ""
    tools = ", ".join(f"{name} {count}" for name, count in list(s.tools.items())[:6]) or "none"
    lines = [
        f"trace      {s.path} ({_size(s.bytes)})",
        f"run        {s.run_id} · agent {s.agent} · seed {s.seed} · started {s.started_at}",
        f"ended      {s.status or 'unknown (no run_end)'}" + (f" — {s.error}" if s.error else ""),
        f"steps      {s.steps} in {s.duration_s:.1f}s · models {', '.join(s.models) or 'none'}",
        f"model      {s.model_calls} calls ({s.streamed_calls} streamed, {s.model_errors} errors)",
        f"tools      {s.tool_calls} calls ({s.tool_errors} errors): {tools}",
        f"tokens     input {tokens['input_tokens']:,} · output {tokens['output_tokens']:,} · "
        f"cache write {tokens['cache_creation_input_tokens']:,} · "
        f"cache read {tokens['cache_read_input_tokens']:,}",
        f"cost       ${s.cost_usd:.4f}",
        f"harness    {s.checkpoints} checkpoints · {s.compactions} compactions · {s.notes} notes",
        f"verified   {s.verifications_passed}/{verifications} passed{progress}",
    ]
    if s.problems:
        lines.append("problems")
        lines.extend(f"  - {problem}" for problem in s.problems)
    else:
        lines.append("problems   none")
    return "\n".join(lines)


def render_metrics(m: RunMetrics) -> str:
    """The metrics block (docs/metrics.md): a few lines under the summary."""
    if m.verified_pass:
        verdict = f"verified pass at step {m.verified_at_step}"
    else:
        verdict = f"no verified pass (progress {m.progress_end:.0%})"
    if m.false_claim:
        verdict += " — FALSE CLAIM: ended ok without a verified pass"
    budget = {"argument": "given", "trace": "recorded", "slice": "the slice", "run": "the run's steps"}
    stall = f" from step {m.longest_no_progress_from}" if m.longest_no_progress_from is not None else ""
    loops = ", ".join(f"{rule} {count}" for rule, count in m.loops.items() if count) or "none"
    loop_rate = f"{m.loop_rate:.0%}" if m.loop_rate is not None else "n/a"
    pressure = (
        f", {m.peak_context_pressure:.1%} of the window at step {m.peak_context_step}"
        if m.peak_context_pressure is not None
        else " (window unknown: " + ", ".join(m.unknown_windows) + ")"
        if m.unknown_windows
        else ""
    )
    hit_rate = f"{m.cache_hit_rate:.0%}" if m.cache_hit_rate is not None else "n/a"
    per_pass = f"${m.cost_per_verified_pass:.4f}" if m.cost_per_verified_pass is not None else "n/a"
    guards = ", ".join(f"{action} {count}" for action, count in m.guard_events.items()) or "none"
    return "\n".join(
        [
            f"metrics    {verdict}",
            f"progress   AUC {m.progress_auc:.2f} over {m.step_budget} steps "
            f"({budget[m.step_budget_source]}) · "
            f"longest without progress {m.longest_no_progress} calls{stall}",
            f"loops      {m.looped_actions} of {m.actions} actions in loops ({loop_rate}): {loops}",
            f"context    cache hit {hit_rate} · peak {m.peak_context_tokens:,} tokens{pressure} · "
            f"cost per verified pass {per_pass}",
            f"incidents  restarts {m.restarts} · watchdog {m.watchdog_fires} · guards {guards} · "
            f"retried 429 {m.rate_limited} · 529 {m.overloaded} (weather) · "
            f"other model errors {m.model_errors}",
        ]
    )


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if count < 1024 or unit == "MiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return f"{count} B"
