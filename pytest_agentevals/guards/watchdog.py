"""The watchdog on verified progress: checkpoint-and-ask, then stop the run as `stalled`.

It counts successful model calls since the last `verification` event that raised progress (a higher
`progress` than any before, or a check passing for the first time when it has no `progress`). When
`within` calls passed without one, it holds the next request and

1. writes a `watchdog` event (action `ask`) and fsyncs the trace — the checkpoint: the trace is
   durable there and names the run's last `checkpoint` event, where a resume would start;
2. asks `ask(run, reason)` — in pytest the `pytest_agentevals_watchdog(run, reason)` hook — whether
   to go on: `True` writes a `watchdog` event (action `continue`) and grants `within` more
   calls; anything else (no hook, None, False)
3. stops the run as `stalled`.

`expect_progress(within=N, reason=...)` announces legitimate long work: the watchdog allows at least
N calls from there (a `watchdog` event, action `expect`), until progress or, used as a `with` block,
the block's end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .protocol import Call, CallResult, Guard, Ruling, Run

Ask = Callable[[Any, str], Any]


class Watchdog(Guard):
    """`Watchdog(within, ask=None)`: ask after `within` successful model calls without progress."""

    name = "watchdog"

    def __init__(self, within: int, ask: Ask | None = None) -> None:
        if isinstance(within, bool) or not isinstance(within, int) or within < 1:
            raise ValueError(f"the watchdog needs within >= 1 model calls, got {within!r}")
        self.within = within
        self.ask = ask
        self.window = within  # the calls allowed now: `within`, or an expect_progress grace
        self.since = 0  # successful calls since progress (or since the grace began)
        self.grace: str | None = None
        self.best: float | None = None
        self._passed: set[str] = set()
        self._run: Run | None = None

    def limits(self) -> dict[str, float]:
        return {"stall_calls": self.within}

    def start(self, run: Run) -> Ruling | None:
        self._run = run
        return None

    @property
    def calls_left(self) -> int:
        """Successful model calls left before the watchdog asks."""
        return max(0, self.window - self.since)

    def observe(self, event: Mapping[str, Any]) -> None:
        if event.get("type") != "verification" or not self._raises_progress(event):
            return
        self.since = 0
        self.window = self.within
        self.grace = None

    def _raises_progress(self, event: Mapping[str, Any]) -> bool:
        progress = event.get("progress")
        if isinstance(progress, int | float) and not isinstance(progress, bool):
            if self.best is None or progress > self.best:
                self.best = float(progress)
                return True
            return False
        name = str(event.get("name"))
        if event.get("passed") is True and name not in self._passed:
            self._passed.add(name)
            return True
        return False

    def before_call(self, call: Call) -> Ruling | None:
        if self.since < self.window:
            return None
        run = self._run
        grace = f" (after expect_progress: {self.grace})" if self.grace else ""
        best = "none yet" if self.best is None else f"{self.best:g}"
        reason = f"{self.since} model calls without verified progress{grace}; progress so far: {best}"
        if run is not None:
            run.emit(
                "watchdog",
                sync=True,
                action="ask",
                reason=reason,
                calls_without_progress=self.since,
                within=self.window,
                progress=self.best,
                last_checkpoint=run.last_checkpoint,
            )
        answer = self.ask(run, reason) if self.ask is not None else None
        if answer is True:
            if run is not None:
                run.emit("watchdog", action="continue", reason=f"asked to go on: {within_text(self.within)}")
            self.since = 0
            self.window = self.within
            self.grace = None
            return None
        return Ruling.stop(
            "stalled",
            reason,
            fix="report progress with pytest_agentevals.verification(..., progress=...), announce long "
            "work with expect_progress(within=N), raise stall_calls, or answer the "
            "pytest_agentevals_watchdog hook with True to go on",
            key="stall_calls",
            limit=self.window,
        )

    def after_call(self, call: Call, result: CallResult | None) -> Ruling | None:
        if result is not None and result.ok:
            self.since += 1
        return None

    # -- expect_progress ------------------------------------------------------------------------

    def expect(self, within: int, reason: str) -> None:
        """Allow at least `within` more successful calls without progress from here (a grace never
        shortens what the window allows already)."""
        if self._run is not None:
            self._run.emit("watchdog", action="expect", reason=reason, within=within)
        if within <= self.window - self.since:
            return
        self.since = 0
        self.window = within
        self.grace = reason

    def end_grace(self, reason: str) -> None:
        """A `with expect_progress(...)` block ended: back to the normal window, from here."""
        if self.grace == reason:
            self.since = 0
            self.window = self.within
            self.grace = None


def within_text(within: int) -> str:
    return f"{within} more model call{'s' if within != 1 else ''} before the next ask"
