"""The watchdog: notices a run that stopped making progress, or that repeats one tool call.

It only observes and says why it would fire; the harness decides what firing does (first a nudge,
then aborting the attempt so the supervisor restarts it from the last checkpoint).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


class Watchdog:
    """Fires after `no_progress_steps` steps without a newly verified task, or when the same tool
    call (same name and input) comes `repeat_limit` times in a row."""

    def __init__(self, no_progress_steps: int = 20, repeat_limit: int = 4) -> None:
        if no_progress_steps < 1 or repeat_limit < 2:
            raise ValueError("the watchdog needs no_progress_steps >= 1 and repeat_limit >= 2")
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
        if self.repeats >= self.repeat_limit:
            call = self._last_call or ""
            shown = call if len(call) <= 120 else call[:117] + "..."
            return f"the same call {self.repeats} times in a row: {shown}"
        if self.idle_steps >= self.no_progress_steps:
            return f"{self.idle_steps} steps without a newly verified task"
        return None
