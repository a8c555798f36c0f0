"""A trace's summary as a person reads it: the ten-second view `agentevals show` prints first."""

from __future__ import annotations

from .summary import TraceSummary


def summary_text(s: TraceSummary) -> str:
    """The summary, a line per aspect: the file, the run, how it ended, calls, tokens, cost, harness
    events, verifications, and the problems found in the file."""
    tokens = s.tokens
    verifications = s.verifications_passed + s.verifications_failed
    progress = f", progress {s.last_progress:.0%}" if s.last_progress is not None else ""
    tools = ", ".join(f"{name} {count}" for name, count in list(s.tools.items())[:6]) or "none"
    lines = [
        f"trace      {s.path} ({_size(s.bytes)})",
        f"run        {s.run_id} · agent {s.agent} · seed {s.seed} · started {s.started_at}"
        + (f" · session {s.session}" if s.session is not None else ""),
        f"ended      {s.status or 'unknown (no run_end)'}" + (f" — {s.error}" if s.error else ""),
        f"steps      {s.steps} in {s.duration_s:.1f}s · models {', '.join(s.models) or 'none'}",
        f"model      {s.model_calls} calls ({s.streamed_calls} streamed, {s.model_errors} errors)",
        f"tools      {s.tool_calls} calls ({s.tool_errors} errors): {tools}",
        f"tokens     input {tokens['input_tokens']:,} · output {tokens['output_tokens']:,} · "
        f"cache write {tokens['cache_creation_input_tokens']:,}{cache_write_split(s.cache_writes)} · "
        f"cache read {tokens['cache_read_input_tokens']:,}",
        f"cost       ${s.cost_usd:.4f}",
        f"harness    {s.checkpoints} checkpoints · {s.compactions} compactions · {s.notes} notes",
        f"verified   {s.verifications_passed}/{verifications} passed{progress}"
        + (" (of no model call: not the agent's work)" if s.model_calls == 0 and verifications else ""),
    ]
    lines.extend(_correlation(s))
    if s.problems:
        lines.append("problems")
        lines.extend(f"  - {problem}" for problem in s.problems)
    else:
        lines.append("problems   none")
    return "\n".join(lines)


def cache_write_split(writes: dict[str, int]) -> str:
    """The cache writes by lifetime, in brackets after their total; calls recorded without the
    split (older traces) are said to be priced at the 5-minute rate, as they are."""
    five, hour, unsplit = writes.get("5m", 0), writes.get("1h", 0), writes.get("unsplit", 0)
    if not (five or hour or unsplit):
        return ""
    if not (five or hour):
        return " (no 5m/1h split recorded: priced at the 5-minute rate)"
    rest = f" · {unsplit:,} without a split, priced at the 5-minute rate" if unsplit else ""
    return f" (5m {five:,} · 1h {hour:,}{rest})"


CORRELATION_SHOWN = 8


def trace_id(traceparent: str) -> str:
    """The trace id of a W3C traceparent (`00-<trace id>-<parent id>-<flags>`), or the whole value."""
    parts = traceparent.split("-")
    return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else traceparent


def _correlation(s: TraceSummary) -> list[str]:
    """The model calls' request ids and trace ids, to find an exchange from a ticket or a span."""
    if not s.correlation:
        return []
    lines = [f"requests   {len(s.correlation)} model calls carry a request-id or a traceparent"]
    for call in s.correlation[:CORRELATION_SHOWN]:
        parts = [f"seq {call['seq']} (step {call['step']})"]
        if "request_id" in call:
            parts.append(f"request-id {call['request_id']}")
        if "traceparent" in call:
            parts.append(f"trace {trace_id(call['traceparent'])}")
        lines.append("  - " + " · ".join(parts))
    if len(s.correlation) > CORRELATION_SHOWN:
        lines.append(f"  … {len(s.correlation) - CORRELATION_SHOWN} more (--format json lists them all)")
    return lines


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if count < 1024 or unit == "MiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return f"{count} B"
