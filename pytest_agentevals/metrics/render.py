"""A run's metrics as people and programs read them: the block under `agentevals show`'s summary
(docs/metrics.md), and the whole of what `show` prints, the trace's summary first."""

from __future__ import annotations

import json

from ..trace.events import NO_MODEL_CALLS
from ..trace.render import cache_write_split, summary_text
from ..trace.summary import TraceSummary
from ..trace.terminal import safe
from .run import RunMetrics


def shown(summary: TraceSummary, metrics: RunMetrics, format: str) -> str:
    """What `agentevals show` prints of a run: its summary and its metrics, as text or one JSON object."""
    if format == "json":
        return json.dumps({**summary.to_json(), "metrics": metrics.to_json()}, indent=2)
    return safe(summary_text(summary) + "\n" + text(metrics))  # a trace from a pull request


def text(m: RunMetrics) -> str:
    """The metrics block (docs/metrics.md): a few lines under the summary."""
    if m.status == NO_MODEL_CALLS or (m.model_calls == 0 and m.complete):
        # No model call: the agent decided nothing, so no verdict, AUC or rate says anything of it
        # (its verifications checked what was there before it, not what it did).
        return "\n".join(
            [
                "metrics    no verdict: the run called no model, so nothing the agent did was checked",
                f"incidents  guards {', '.join(f'{a} {c}' for a, c in m.guard_events.items()) or 'none'} · "
                f"other model errors {m.model_errors}",
            ]
        )
    if m.verified_pass:
        verdict = f"verified pass at step {m.verified_at_step}"
    elif m.unverified:
        verdict = "unverified: ended ok with no verification (no evidence either way; record --verify CMD)"
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
            f"context    cache hit {hit_rate}{_writes(m)} · "
            f"peak {m.peak_context_tokens:,} tokens{pressure} · "
            f"cost per verified pass {per_pass}",
            f"incidents  restarts {m.restarts} · watchdog {m.watchdog_fires} · guards {guards} · "
            f"retried 429 {m.rate_limited} · 529 {m.overloaded} (weather) · "
            f"other model errors {m.model_errors}",
        ]
    )


def _writes(m: RunMetrics) -> str:
    split = cache_write_split(m.cache_writes or {})
    return f" · cache writes{split.replace(' (', ' ', 1)[:-1]}" if split else ""
