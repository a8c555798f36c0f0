"""Every metric of a run, or of a slice of one, in one pass over its events: `compute`, `analyze`.

The events are a list from `read_trace`, or any iterable of them (a `TraceReader`, read once); a
torn trace (no `run_end`) is measured as far as it goes. Formulas: docs/metrics.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..trace.events import Event
from ..trace.reader import TraceReader
from ..trace.totals import RunTotals, is_model_call, number
from . import incidents
from .context import ContextWindows, context_tokens
from .loops import Action, ActionStream, LoopDetector, LoopTally
from .progress import ProgressCurve, false_claim, progress_of
from .series import CallPoint, Marker, ProgressPoint, RunSeries
from .spend import cache_hit_rate, cost_per_verified_pass

# Keys of run_start.budget that give a step budget (model calls), in order of preference.
STEP_BUDGET_KEYS = ("max_calls", "max_steps")


@dataclass(frozen=True)
class RunMetrics:
    """The metrics of a run or of a slice of one (`first_step`..`last_step`). See docs/metrics.md."""

    run_id: str | None
    agent: str | None
    seed: Any
    models: list[str]
    status: str | None  # run_end's status; None when the scope does not reach a run_end
    complete: bool  # the scope ends with the run's run_end
    first_step: int | None  # the slice asked for; None for the whole run
    last_step: int | None
    # calls
    steps: int  # successful model calls
    model_calls: int
    model_errors: int  # failed model calls other than weather
    rate_limited: int  # 429s (weather)
    overloaded: int  # 529s (weather)
    tool_calls: int
    tool_errors: int
    duration_s: float
    # verified progress
    verified_pass: bool
    verified_at_step: int | None
    claimed: bool  # the run ended `ok`
    false_claim: bool  # claimed while its verifications did not pass (never without one)
    progress_start: float
    progress_end: float
    verified_gain: float
    progress_auc: float
    step_budget: int
    step_budget_source: str  # "argument", "trace" (run_start.budget), "slice" or "run" (its steps)
    longest_no_progress: int  # model calls
    longest_no_progress_from: int | None  # the first step of that stretch
    # loops
    actions: int
    looped_actions: int
    loop_rate: float | None
    loops: dict[str, int]  # hits by rule
    # spend
    tokens: dict[str, int]
    cost_usd: float
    unpriced_models: list[str]
    cost_per_verified_pass: float | None
    cache_hit_rate: float | None
    peak_context_tokens: int
    peak_context_pressure: float | None
    peak_context_step: int | None
    unknown_windows: list[str]
    # harness incidents
    checkpoints: int
    compactions: int
    restarts: int
    watchdog_fires: int
    guard_events: dict[str, int]  # by action (stop, warn...)
    budget_stops: int
    divergences: int
    crashed: bool  # the run ended with an exception
    # Cache-write tokens by lifetime ("5m", "1h") and of calls recorded without the split
    # ("unsplit", priced at the 5-minute rate); None in metrics stored before the split was counted.
    cache_writes: dict[str, int] | None = None
    # The budget that stopped the run, as `key=limit` ("max_cost_usd=0.5"), from its guard event;
    # None when no budget stopped it (or the stop named no key).
    budget_stop: str | None = None
    # Defaulted, so metrics stored before they were measured still load.
    verifications: int = 0  # verification events in scope
    unverified: bool = False  # claimed (ended ok) with no verification at all: no evidence either way

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunMetrics:
        """Metrics stored with `to_json` (a marathon's results file), back as an object; keys it
        does not know are ignored, so metrics stored by a newer version still load."""
        names = [item.name for item in fields(cls) if item.name in data or item.default is MISSING]
        missing = [name for name in names if name not in data]
        if missing:
            raise ValueError(f"stored run metrics lack {', '.join(missing)}; store them with to_json()")
        return cls(**{name: data[name] for name in names})


@dataclass
class _Counts:
    restarts: int = 0
    watchdog_fires: int = 0
    budget_stops: int = 0
    divergences: int = 0
    rate_limited: int = 0
    overloaded: int = 0
    guard_events: dict[str, int] = field(default_factory=dict)
    budget_stop: str | None = None


class MetricsScan:
    """The single pass behind `compute` and `analyze`: `add` each event, then `metrics()`.

    Usable on its own to measure a run while reading it for something else (`agentevals show`
    feeds it the events its summary reads), or as events arrive.
    """

    def __init__(
        self,
        *,
        step_budget: int | None = None,
        steps: tuple[int | None, int | None] | None = None,
        context_windows: Mapping[str, int] | None = None,
        loops: LoopDetector | None = None,
        progress_start: float | None = None,
        series: bool = False,
    ) -> None:
        if step_budget is not None and (not isinstance(step_budget, int) or step_budget < 0):
            raise ValueError(f"step_budget must be a whole number of model calls >= 0, got {step_budget!r}")
        first, last = steps if steps is not None else (None, None)
        for value in (first, last):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ValueError(f"steps must be whole step numbers or None, got {steps!r}")
        if first is not None and last is not None and first > last:
            raise ValueError(f"steps ({first}, {last}): the first step is after the last")
        self._step_budget = step_budget
        self._first, self._last = first, last
        self._low = -math.inf if first is None else first
        self._high = math.inf if last is None else last
        self._whole = steps is None or (first is None and last is None)
        self._windows = ContextWindows(context_windows)
        self._window_of: tuple[str | None, int | None] = (None, None)  # the last model's window
        self._curve = ProgressCurve(progress_start or 0.0)
        self._verifications = 0  # in scope
        self._actions = ActionStream()
        self._loops = LoopTally(loops)
        self._totals = RunTotals()
        self._counts = _Counts()
        self._series = RunSeries() if series else None
        self._start: Event = {}
        self._end: Event | None = None
        self._models: dict[str, None] = {}
        self._unknown_windows: dict[str, None] = {}
        self._max_step = 0  # over the whole run: decides whether run_end is in scope
        self._scope_max_step: int | None = None  # the last successful step in scope
        self._t_before = 0.0  # the time the step before the scope ended
        self._t_last: float | None = None
        self._peak_tokens = 0
        self._peak_pressure: float | None = None
        self._peak_step: int | None = None
        self._cost = 0.0

    # -- the pass ----------------------------------------------------------------------------------

    def add(self, event: Event) -> None:
        kind = event.get("type")
        step = event.get("step")
        if type(step) is int:
            if step > self._max_step:
                self._max_step = step
            inside = self._low <= step <= self._high
        elif kind == "run_start":
            self._run_start(event)
            return
        elif kind == "run_end":
            inside = self._high >= self._max_step
        else:
            inside = self._whole
        if not inside:
            self._outside(kind, event, step)
            return
        t = event.get("t")
        if type(t) is float or type(t) is int:
            self._t_last = t
        if kind == "model_call":
            self._model_call(event)
        elif kind == "tool_call":
            self._totals.add(event)
            self._take_action(self._actions.tool_call(event), event)
        elif kind == "verification":
            self._verification(event, step)
        else:
            if kind == "run_end":
                self._end = event
            else:
                self._totals.add(event)
            self._incident(event)

    def _run_start(self, event: Event) -> None:
        self._start = event
        if self._series is not None:
            budget = event.get("budget")
            self._series.budget = dict(budget) if isinstance(budget, dict) else None

    def _outside(self, kind: Any, event: Event, step: Any) -> None:
        """An event outside the slice: what comes before it still sets the scene."""
        if kind == "model_call":
            self._derive(event)  # an answer inside the slice may come back to a call before it
        elif kind == "tool_call":
            self._actions.stop_deriving()
        if type(step) is int and step < self._low:
            if kind == "verification":
                self._curve.add(event)  # progress made before the slice is carried into it
            t = number(event.get("t"))
            if t is not None:
                self._t_before = t

    def _verification(self, event: Event, step: Any) -> None:
        self._verifications += 1
        self._totals.add(event)
        self._curve.add(event)
        if self._series is not None:
            self._series.progress.append(
                ProgressPoint(
                    step if isinstance(step, int) else 0,
                    _t(event),
                    str(event.get("name")),
                    bool(event.get("passed")),
                    progress_of(event),
                    self._curve.level,
                )
            )

    def _derive(self, event: Event) -> None:
        for action in self._actions.model_call(event):
            if self._low <= action.step <= self._high:
                self._take_action(action, event)

    def _take_action(self, action: Action, event: Event) -> None:
        hit = self._loops.add(action)
        if hit is not None and self._series is not None:
            self._series.markers.append(Marker("loop", action.step, _t(event), hit.description))

    def _model_call(self, event: Event) -> None:
        if self._actions.deriving:
            self._derive(event)
        if not self._totals.add_model_call(event):
            self._incident(event)
            return
        step = event.get("step")
        step = step if isinstance(step, int) else 0
        self._scope_max_step = step
        model = event.get("model")
        model = model if isinstance(model, str) else ""
        if model and model not in self._models:
            self._models[model] = None
        usage = event.get("usage")
        context = context_tokens(usage)
        if model != self._window_of[0]:
            self._window_of = (model, self._windows.window(model))
        window = self._window_of[1]
        if window is None:
            self._unknown_windows[model] = None
            pressure = None
        else:
            pressure = context / window
            if self._peak_pressure is None or pressure > self._peak_pressure:
                self._peak_pressure, self._peak_step = pressure, step
        if context > self._peak_tokens:
            self._peak_tokens = context
        if self._series is not None:
            cost = number(event.get("cost_usd"))
            self._cost += cost or 0.0
            tokens = usage if isinstance(usage, dict) else {}
            self._series.calls.append(
                CallPoint(
                    step,
                    _t(event),
                    model,
                    context,
                    pressure,
                    _int(tokens.get("input_tokens")),
                    _int(tokens.get("cache_creation_input_tokens")),
                    _int(tokens.get("cache_read_input_tokens")),
                    _int(tokens.get("output_tokens")),
                    cost,
                    round(self._cost, 8),
                )
            )

    def _incident(self, event: Event) -> None:
        kind = event.get("type")
        marker = incidents.incident_of(event)
        if marker is None:
            return
        counts = self._counts
        if marker == "retry":
            if not is_model_call(event):
                return
            if incidents.weather(event) == "rate_limited":
                counts.rate_limited += 1
            else:
                counts.overloaded += 1
        elif marker == "restart":
            counts.restarts += 1
        elif marker == "watchdog" and incidents.is_watchdog_fire(event):
            counts.watchdog_fires += 1
        elif marker == "divergence":
            counts.divergences += 1
        if kind == "guard":
            action = str(event.get("action") or "unknown")
            counts.guard_events[action] = counts.guard_events.get(action, 0) + 1
        if marker == "budget_stop":
            counts.budget_stops += 1
            key = event.get("key")
            if kind == "guard" and isinstance(key, str) and counts.budget_stop is None:
                limit = number(event.get("limit"))
                counts.budget_stop = key if limit is None else f"{key}={limit:g}"
        if self._series is not None:
            step = event.get("step")
            step = step if isinstance(step, int) else self._max_step
            self._series.markers.append(Marker(marker, step, _t(event), incidents.describe(event)))

    # -- the result ---------------------------------------------------------------------------------

    def metrics(self) -> RunMetrics:
        totals, counts, curve = self._totals, self._counts, self._curve
        first = max(1, self._first) if self._first is not None else 1
        ran_to = self._scope_max_step if self._scope_max_step is not None else first - 1
        budget, source = self._budget(first, ran_to)
        # What was verified before the scope's first event (before step 1: only `progress_start`).
        progress_start = (
            curve.at(self._first - 1) if self._first is not None and self._first > 0 else curve.start
        )
        progress_end = curve.at(self._last) if self._last is not None else curve.level
        verified = curve.passed_by(self._last)
        stall = curve.longest_stall(first, ran_to)
        status = self._end.get("status") if self._end is not None else None
        status = status if isinstance(status, str) else None
        unpriced = sorted(totals.unpriced)
        weather = counts.rate_limited + counts.overloaded
        return RunMetrics(
            run_id=_str(self._start.get("run_id")),
            agent=_str(self._start.get("agent")),
            seed=self._start.get("seed"),
            models=list(self._models),
            status=status,
            complete=self._end is not None,
            first_step=self._first,
            last_step=self._last,
            steps=totals.model_calls - totals.model_errors,
            model_calls=totals.model_calls,
            model_errors=totals.model_errors - weather,
            rate_limited=counts.rate_limited,
            overloaded=counts.overloaded,
            tool_calls=totals.tool_calls,
            tool_errors=totals.tool_errors,
            duration_s=round(max(0.0, (self._t_last or self._t_before) - self._t_before), 6),
            verified_pass=verified,
            verified_at_step=curve.passed_at if verified else None,
            claimed=status == "ok",
            false_claim=false_claim(status, verified, checked=self._verifications > 0),
            verifications=self._verifications,
            unverified=status == "ok" and self._verifications == 0,
            progress_start=progress_start,
            progress_end=progress_end,
            verified_gain=max(0.0, progress_end - progress_start),
            progress_auc=curve.auc(first, budget),
            step_budget=budget,
            step_budget_source=source,
            longest_no_progress=stall.steps,
            longest_no_progress_from=stall.first_step,
            actions=self._loops.actions,
            looped_actions=self._loops.looped,
            loop_rate=self._loops.rate,
            loops=self._loops.by_rule(),
            tokens=dict(totals.tokens),
            cache_writes=dict(totals.cache_writes),
            cost_usd=round(totals.cost_usd, 8),
            unpriced_models=unpriced,
            cost_per_verified_pass=cost_per_verified_pass(
                None if unpriced else round(totals.cost_usd, 8), 1 if verified else 0
            ),
            cache_hit_rate=cache_hit_rate(totals.tokens),
            peak_context_tokens=self._peak_tokens,
            peak_context_pressure=self._peak_pressure,
            peak_context_step=self._peak_step,
            unknown_windows=sorted(self._unknown_windows),
            checkpoints=totals.checkpoints,
            compactions=totals.compactions,
            restarts=counts.restarts,
            watchdog_fires=counts.watchdog_fires,
            guard_events=dict(counts.guard_events),
            budget_stops=counts.budget_stops,
            budget_stop=counts.budget_stop,
            divergences=counts.divergences,
            crashed=self._end is not None and isinstance(self._end.get("error"), dict),
        )

    def series(self) -> RunSeries:
        if self._series is None:
            raise ValueError("this scan keeps no series: create it with series=True")
        return self._series

    def _budget(self, first: int, ran_to: int) -> tuple[int, str]:
        if self._step_budget is not None:
            return self._step_budget, "argument"
        if self._last is not None:
            return max(0, self._last - first + 1), "slice"
        if self._whole:
            recorded = self._start.get("budget")
            if isinstance(recorded, dict):
                for key in STEP_BUDGET_KEYS:
                    value = recorded.get(key)
                    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                        return value, "trace"
            return max(0, ran_to), "run"
        return max(0, ran_to - first + 1), "slice"


def compute(
    events: Iterable[Event],
    *,
    step_budget: int | None = None,
    steps: tuple[int | None, int | None] | None = None,
    context_windows: Mapping[str, int] | None = None,
    loops: LoopDetector | None = None,
    progress_start: float | None = None,
) -> RunMetrics:
    """Every metric of a run's events, or of the slice `steps=(first, last)` of them (either end
    may be None: from the start, to the end). `step_budget` overrides the budget the AUC is
    averaged over; `context_windows` adds or overrides rows of the context-window table; `loops`
    is the detector to use (its thresholds); `progress_start` is verified progress already made
    before these events (a resumed run's, from its checkpoint)."""
    scan = MetricsScan(
        step_budget=step_budget,
        steps=steps,
        context_windows=context_windows,
        loops=loops,
        progress_start=progress_start,
    )
    for event in events:
        scan.add(event)
    return scan.metrics()


def analyze(
    events: Iterable[Event],
    *,
    step_budget: int | None = None,
    steps: tuple[int | None, int | None] | None = None,
    context_windows: Mapping[str, int] | None = None,
    loops: LoopDetector | None = None,
    progress_start: float | None = None,
) -> tuple[RunMetrics, RunSeries]:
    """The metrics and the series a report draws, in the same single pass (arguments as `compute`)."""
    scan = MetricsScan(
        step_budget=step_budget,
        steps=steps,
        context_windows=context_windows,
        loops=loops,
        progress_start=progress_start,
        series=True,
    )
    for event in events:
        scan.add(event)
    return scan.metrics(), scan.series()


def compute_file(path: str | Path, **options: Any) -> RunMetrics:
    """The metrics of a trace file, read once (request deltas left unresolved: nothing here needs
    them). A torn last line warns (`TornTraceWarning`) and the run is measured as far as it goes;
    anything else malformed raises `TraceFormatError` naming the file and line."""
    return compute(TraceReader(path, resolve=False), **options)


def _t(event: Event) -> float:
    return number(event.get("t")) or 0.0


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
