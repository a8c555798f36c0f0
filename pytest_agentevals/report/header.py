"""A run's header: its status and headline facts, and every metric of `RunMetrics`, readable.

The metrics table walks the fields of `RunMetrics`, so a metric added there shows here without a
change (under "other", with its field name) until it is given a label and a group below.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from html import escape
from typing import Any

from ..metrics import RunMetrics
from ..trace.events import RUN_STATUSES
from ..trace.render import cache_write_split
from . import numbers
from .run import RunView

Format = Callable[[Any], str]


def _yes(value: Any) -> str:
    return "yes" if value else "no"


def _plain(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return _yes(value)
    if isinstance(value, dict):
        shown = [f"{k} {v}" for k, v in value.items() if v]
        return ", ".join(shown) or "none"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    if isinstance(value, float):
        return f"{value:.4g}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _tokens(value: Any) -> str:
    if isinstance(value, dict):
        names = {
            "input_tokens": "input",
            "cache_creation_input_tokens": "cache write",
            "cache_read_input_tokens": "cache read",
            "output_tokens": "output",
        }
        return " · ".join(f"{names.get(k, k)} {numbers.count(v)}" for k, v in value.items())
    return _plain(value)


def _cache_writes(value: Any) -> str:
    if not isinstance(value, dict):
        return "— (not counted when these metrics were stored)"
    return cache_write_split(value).strip(" ()") or "none"


def _step(value: Any) -> str:
    return "—" if value is None else f"step {value:,}"


# field -> (group, label, format)
METRICS: dict[str, tuple[str, str, Format]] = {
    "status": ("outcome", "status (run_end)", _plain),
    "complete": ("outcome", "trace complete (has run_end)", _yes),
    "verified_pass": ("outcome", "verified pass", _yes),
    "verified_at_step": ("outcome", "verified at", _step),
    "claimed": ("outcome", "claimed done (ended ok)", _yes),
    "false_claim": ("outcome", "false claim", _yes),
    "unverified": ("outcome", "unverified (ended ok, no verification)", _yes),
    "verifications": ("outcome", "verifications", numbers.count),
    "crashed": ("outcome", "crashed", _yes),
    "progress_auc": ("progress", "progress-AUC", numbers.ratio),
    "step_budget": ("progress", "step budget (AUC over)", numbers.count),
    "step_budget_source": ("progress", "step budget from", _plain),
    "progress_start": ("progress", "progress at start", numbers.percent),
    "progress_end": ("progress", "progress at end", numbers.percent),
    "verified_gain": ("progress", "verified gain", numbers.percent),
    "longest_no_progress": ("progress", "longest without progress (calls)", numbers.count),
    "longest_no_progress_from": ("progress", "… from", _step),
    "steps": ("calls", "steps (successful model calls)", numbers.count),
    "model_calls": ("calls", "model calls", numbers.count),
    "model_errors": ("calls", "model errors (not weather)", numbers.count),
    "rate_limited": ("calls", "retried 429 (rate limited)", numbers.count),
    "overloaded": ("calls", "retried 529 (overloaded)", numbers.count),
    "tool_calls": ("calls", "tool calls", numbers.count),
    "tool_errors": ("calls", "tool errors", numbers.count),
    "duration_s": ("calls", "duration", numbers.duration),
    "first_step": ("calls", "slice from", _step),
    "last_step": ("calls", "slice to", _step),
    "actions": ("loops", "actions", numbers.count),
    "looped_actions": ("loops", "actions in loops", numbers.count),
    "loop_rate": ("loops", "loop rate", numbers.percent),
    "loops": ("loops", "loops by rule", _plain),
    "tokens": ("spend", "tokens", _tokens),
    "cache_writes": ("spend", "cache writes by lifetime", _cache_writes),
    "cost_usd": ("spend", "cost", numbers.usd),
    "cost_per_verified_pass": ("spend", "cost per verified pass", numbers.usd),
    "cache_hit_rate": ("spend", "prompt-cache hit rate", numbers.percent),
    "unpriced_models": ("spend", "unpriced models", _plain),
    "models": ("spend", "models", _plain),
    "peak_context_tokens": ("context", "peak context (tokens)", numbers.count),
    "peak_context_pressure": ("context", "peak context pressure", numbers.percent),
    "peak_context_step": ("context", "peak at", _step),
    "unknown_windows": ("context", "models of unknown window", _plain),
    "checkpoints": ("incidents", "checkpoints", numbers.count),
    "compactions": ("incidents", "compactions", numbers.count),
    "restarts": ("incidents", "restarts", numbers.count),
    "watchdog_fires": ("incidents", "watchdog firings", numbers.count),
    "guard_events": ("incidents", "guard events", _plain),
    "budget_stops": ("incidents", "budget stops", numbers.count),
    "budget_stop": ("incidents", "stopped by budget", _plain),
    "divergences": ("incidents", "replay divergences", numbers.count),
    "run_id": ("run", "run id", _plain),
    "agent": ("run", "agent", _plain),
    "seed": ("run", "seed", _plain),
}
GROUPS = ("outcome", "progress", "calls", "spend", "context", "loops", "incidents", "run", "other")


def metric_rows(metrics: RunMetrics) -> list[tuple[str, str, str, str]]:
    """(group, field, label, value) for every field of RunMetrics."""
    rows = []
    for item in fields(metrics):
        group, label, fmt = METRICS.get(item.name, ("other", item.name.replace("_", " "), _plain))
        value = getattr(metrics, item.name)
        try:
            shown = fmt(value)
        except (TypeError, ValueError):
            shown = _plain(value)
        rows.append((group, item.name, label, shown))
    return rows


def metrics_table(metrics: RunMetrics) -> str:
    by_group: dict[str, list[str]] = {group: [] for group in GROUPS}
    for group, name, label, value in metric_rows(metrics):
        by_group[group].append(
            f'<tr data-metric="{escape(name)}"><th>{escape(label)}</th>'
            f'<td class="num">{escape(value)}</td></tr>'
        )
    tables = "".join(
        f"<table><caption>{group}</caption>{''.join(rows)}</table>"
        for group, rows in by_group.items()
        if rows
    )
    return (
        '<details class="metrics" open><summary>Every metric</summary>'
        f'<div class="metrics-grid">{tables}</div></details>'
    )


def status_badge(status: str, crashed: bool = False) -> str:
    kind = "crashed" if crashed else status if status in RUN_STATUSES else "other"
    return f'<span class="badge s-{kind}" data-field="status">{escape(status)}</span>'


def run_label(index: int, run: RunView) -> tuple[str, str]:
    """How a run is named on the page: its agent (a marathon's: the test's short name) and its seed
    as `seed=N`, or its place (`#3`) when it has no seed."""
    seed = run.metrics.seed
    name = run.metrics.agent or "run"
    if type(seed) is int:
        return name, f"seed={seed}"
    return name, f"#{index + 1}"


def run_header(index: int, run: RunView) -> str:
    m = run.metrics
    tokens = sum(m.tokens.values())
    if m.verified_pass:
        verified = f"pass at step {m.verified_at_step:,}" if m.verified_at_step is not None else "pass"
    elif m.unverified:
        verified = "unverified (no verification)"
    else:
        verified = f"no pass ({numbers.percent(m.progress_end, 0)})"
    if m.false_claim:
        verified += " — FALSE CLAIM"
    facts = [
        ("task", _task(run.task), True),
        ("model", ", ".join(m.models) or "—", False),
        ("seed", _plain(m.seed), False),
        ("steps", numbers.count(m.steps), False),
        ("duration", numbers.duration(m.duration_s), False),
        ("tokens", numbers.tokens(tokens), False),
        ("cost", numbers.usd(m.cost_usd) + (" + unpriced" if m.unpriced_models else ""), False),
        ("verified", verified, False),
    ]
    cells = "".join(
        f'<div class="wide"><dt>{name}</dt><dd data-field="{name}" class="long">{escape(value)}</dd></div>'
        if long
        else f'<div><dt>{name}</dt><dd data-field="{name}">{escape(value)}</dd></div>'
        for name, value, long in facts
    )
    started = run.start.get("started_at")
    sub = " · ".join(
        part
        for part in (
            f"run {m.run_id}" if m.run_id else "",
            f"started {started}" if isinstance(started, str) else "",
            str(run.path),
        )
        if part
    )
    error = f'<p class="error"><strong>{escape(run.error)}</strong></p>' if run.error else ""
    name, tag = run_label(index, run)
    badge = status_badge(run.status, m.crashed)
    if run.live is not None and run.end is None:  # watched, not ended: running, or silent for how long
        kind = "running" if run.live == "running" else "silent"
        badge = f'<span class="badge s-{kind}" data-field="status">{escape(run.live)}</span>'
    return (
        f"<header><h2>{badge} {escape(name)} "
        f'<small>{escape(tag)}</small></h2><p class="mute">{escape(sub)}</p>{error}'
        f'{problems_box(run)}<dl class="facts">{cells}</dl></header>'
    )


def problems_box(run: RunView) -> str:
    if not run.problems:
        return ""
    items = "".join(f"<li>{escape(problem)}</li>" for problem in run.problems)
    kind = "problems bad" if run.damaged else "problems"
    return (
        f'<div class="{kind}" data-problems="{len(run.problems)}">'
        f"<strong>This trace is not whole:</strong><ul>{items}</ul></div>"
    )


def _task(task: Any) -> str:
    if task is None:
        return "—"
    text = task if isinstance(task, str) else json.dumps(task, ensure_ascii=False, default=str)
    return text if len(text) <= 300 else text[:299] + "…"
