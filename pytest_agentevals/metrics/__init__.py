"""Metrics: pure functions of a trace's events (or of a slice of them), no pytest and no I/O but
`compute_file`'s one read. The loop guard, the resume layer's phase, the marathon verdicts and the
run report build on them. Each formula, with its edge cases, is in docs/metrics.md.

    metrics = compute(read_trace("run.trace.jsonl"))          # or compute_file(path)
    phase = compute(events, steps=(120, 180))                 # a slice of a run
    metrics, series = analyze(events)                         # and what a report draws
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .context import DEFAULT_CONTEXT_WINDOWS, ContextWindows, context_tokens
    from .incidents import incident_of, is_restart, is_watchdog, is_watchdog_fire, weather
    from .loops import (
        Action,
        ActionStream,
        LoopDetector,
        LoopHit,
        LoopTally,
        action_of,
        actions_of,
        loop_rate,
    )
    from .progress import ProgressCurve, false_claim, progress_curve, progress_of
    from .run import MetricsScan, RunMetrics, analyze, compute, compute_file
    from .series import MARKER_KINDS, CallPoint, Marker, ProgressPoint, RunSeries
    from .spend import cache_hit_rate, cost_per_verified_pass

__all__ = [
    "DEFAULT_CONTEXT_WINDOWS",
    "MARKER_KINDS",
    "Action",
    "ActionStream",
    "CallPoint",
    "ContextWindows",
    "LoopDetector",
    "LoopHit",
    "LoopTally",
    "Marker",
    "MetricsScan",
    "ProgressCurve",
    "ProgressPoint",
    "RunMetrics",
    "RunSeries",
    "action_of",
    "actions_of",
    "analyze",
    "cache_hit_rate",
    "compute",
    "compute_file",
    "context_tokens",
    "cost_per_verified_pass",
    "false_claim",
    "incident_of",
    "is_restart",
    "is_watchdog",
    "is_watchdog_fire",
    "loop_rate",
    "progress_curve",
    "progress_of",
    "weather",
]

__getattr__, __dir__ = attach(__name__, __file__)
