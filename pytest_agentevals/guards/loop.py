"""The loop guard: stops the run as `loop` when the run's tool actions loop.

The rules are the metrics' (`pytest_agentevals.metrics.loops`, docs/metrics.md): the same action
with the same result `repeat` times in a row, the same failing action `failing_repeat` times, two
actions alternating for `alternation` cycles; thought text never counts. Actions come from the
run's `tool_call` events (`@tool`), or, for a run whose tools are not recorded, from its model
calls' `tool_use` blocks and the `tool_result`s that answer them. The loop is found when its last
action is recorded; the run stops before its next model request leaves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..metrics.loops import ActionStream, LoopDetector, LoopHit
from .protocol import Call, Guard, Ruling


class LoopGuard(Guard):
    """`LoopGuard(repeat=3, failing_repeat=3, alternation=3)`; a rule at 0 is off."""

    name = "loop"

    def __init__(self, repeat: int = 3, failing_repeat: int = 3, alternation: int = 3) -> None:
        self.detector = LoopDetector(repeat, failing_repeat, alternation)
        self._actions = ActionStream()
        self.hit: LoopHit | None = None

    def limits(self) -> dict[str, float]:
        detector = self.detector
        return {
            "loop_repeat": detector.repeat,
            "loop_failing_repeat": detector.failing_repeat,
            "loop_alternation": detector.alternation,
        }

    def observe(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "tool_call":  # from the first one on, the run's tool_call events alone are actions
            self._take([self._actions.tool_call(event)])
        elif kind == "model_call":
            self._take(self._actions.model_call(event))

    def _take(self, actions: Any) -> None:
        for action in actions:
            hit = self.detector.observe(action)
            if hit is not None and self.hit is None:
                self.hit = hit

    def before_call(self, call: Call) -> Ruling | None:
        hit = self.hit
        if hit is None:
            return None
        return Ruling.stop(
            "loop",
            f"{hit.rule}: {hit.description}",
            fix="change the harness or the prompt so the agent notices the loop; tune loop_repeat, "
            "loop_failing_repeat, loop_alternation in [tool.agentevals.budget] (0 turns a rule off)",
            rule=hit.rule,
            seqs=[action.seq for action in hit.actions],
        )
