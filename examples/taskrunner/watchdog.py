"""The watchdog: notices a run that stopped making progress, or that repeats one tool call.

`Watchdog.step` is its verdict on one step — the decision a step case tests, called by the loop
(`Attempt._watch`) and by goldens/conftest.py alike: nothing, a nudge (the first firing in an
attempt: the harness tells the model and the watchdog starts counting again), or abort (it fired
again after the nudge: the attempt is abandoned and the supervisor restarts it from the last
checkpoint). Either rule can be off (None): the harness turns a rule off when the framework's own
guard does that job (`pytest_agentevals` watchdog and loop guards), so nothing is counted twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class Verdict:
    """What the watchdog decided at one step: nudge the model, or abort the attempt; and why."""

    action: Literal["nudge", "abort"]
    reason: str


class Watchdog:
    """Fires after `no_progress_steps` steps without a newly verified task, or when the same tool
    call (same name and input) comes `repeat_limit` times in a row. None turns a rule off."""

    def __init__(self, no_progress_steps: int | None = 20, repeat_limit: int | None = 4) -> None:
        if (no_progress_steps is not None and no_progress_steps < 1) or (
            repeat_limit is not None and repeat_limit < 2
        ):
            raise ValueError("the watchdog needs no_progress_steps >= 1 and repeat_limit >= 2 (or None: off)")
        self.no_progress_steps = no_progress_steps
        self.repeat_limit = repeat_limit
        self.reset()

    def reset(self) -> None:
        self.idle_steps = 0
        self.repeats = 0
        self._last_call: str | None = None

    def observe(self, calls: Sequence[tuple[str, Mapping[str, Any]]], progressed: bool) -> str | None:
        """Account for one step (its tool calls; whether a task got verified). Why it fires, if it does."""
        self.idle_steps = 0 if progressed else self.idle_steps + 1
        for name, tool_input in calls:
            key = f"{name}({json.dumps(tool_input, sort_keys=True)})"
            self.repeats = self.repeats + 1 if key == self._last_call else 1
            self._last_call = key
        if self.repeat_limit is not None and self.repeats >= self.repeat_limit:
            call = self._last_call or ""
            shown = call if len(call) <= 120 else call[:117] + "..."
            return f"the same call {self.repeats} times in a row: {shown}"
        if self.no_progress_steps is not None and self.idle_steps >= self.no_progress_steps:
            return f"{self.idle_steps} steps without a newly verified task"
        return None

    def step(
        self, calls: Sequence[tuple[str, Mapping[str, Any]]], progressed: bool, nudged: bool
    ) -> Verdict | None:
        """The verdict on one step: None, a nudge (and counting starts again), or abort when the
        attempt was `nudged` already."""
        reason = self.observe(calls, progressed)
        if reason is None:
            return None
        if nudged:
            return Verdict("abort", reason)
        self.reset()
        return Verdict("nudge", reason)
