"""`until`: end a resumed leg when it reached its goal — a guard, like the budgets.

`@pytest.mark.resume("NAME", until="progress>=0.6")` runs the leg until the run's verified progress
reaches 0.6, then stops it before its next model request. The condition is one comparison:

| quantity   | what                                                                     |
|------------|--------------------------------------------------------------------------|
| `progress` | the run's verified progress, the checkpoint's included (in [0, 1])       |
| `gain`     | verified progress gained in this leg (`progress` minus the checkpoint's) |
| `calls`    | successful model calls in this leg                                       |

with `>=` or `>` and a number: `progress>=0.6`, `gain>0.1`, `calls>=20`. Progress is what
`verification(..., progress=p)` events report (a check without `progress` counts 1.0 when it passed),
the max so far, as `metrics` computes it.

The `Until` guard watches the leg's events (`observe`) and, once the condition holds, answers the next
model request with `Ruling.stop("ok", ...)`: the request does not leave, a `guard` event (`guard:
until`, `status: ok`) says why, `RunStopped` (status `ok`) reaches the harness like any guard's stop,
and the run ends `ok`. The resume layer takes that stop as the leg's normal end (`phase.until_reached`),
whether the harness lets it through or catches it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..guards.protocol import Call, Guard, Ruling
from ..metrics.progress import progress_of
from ..trace.totals import http_ok, is_model_call

QUANTITIES = ("progress", "gain", "calls")
_CONDITION = re.compile(r"^\s*(?P<what>[a-z_]+)\s*(?P<op>>=|>)\s*(?P<value>[0-9]*\.?[0-9]+)\s*$")
FORM = 'write e.g. "progress>=0.6", "gain>0.1" or "calls>=20" (one of: ' + ", ".join(QUANTITIES) + ")"


@dataclass(frozen=True)
class Condition:
    """One `until` condition: a quantity, `>=` or `>`, and a number."""

    what: str
    op: str
    value: float

    @classmethod
    def parse(cls, where: str, raw: Any) -> Condition:
        match = _CONDITION.match(raw) if isinstance(raw, str) else None
        if match is None or match["what"] not in QUANTITIES:
            raise ConfigError(where, f"{raw!r} is not a condition", FORM)
        value = float(match["value"])
        if match["what"] in ("progress", "gain") and value > 1:
            raise ConfigError(where, f"{raw!r}: progress is in [0, 1]", FORM)
        return cls(match["what"], match["op"], value)

    def holds(self, progress: float, gain: float, calls: int) -> bool:
        have = {"progress": progress, "gain": gain, "calls": float(calls)}[self.what]
        # Progress is a sum of fractions (three thirds): compare with a little room.
        slack = 1e-9 if self.what != "calls" else 0.0
        return have >= self.value - slack if self.op == ">=" else have > self.value + slack

    def __str__(self) -> str:
        value = int(self.value) if self.what == "calls" else self.value
        return f"{self.what}{self.op}{value:g}"


class Until(Guard):
    """Stops the leg, with status `ok`, at the first model request after `condition` holds.
    `progress_start` is the verified progress the checkpoint had made."""

    name = "until"

    def __init__(self, condition: Condition, progress_start: float = 0.0) -> None:
        self.condition = condition
        self.progress_start = progress_start
        self.progress = progress_start
        self.calls = 0
        self.reached_at: int | None = None  # the leg's step at which the condition held

    @property
    def reached(self) -> bool:
        return self.reached_at is not None

    def observe(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "verification":
            self.progress = max(self.progress, progress_of(dict(event)))
        elif kind == "model_call" and is_model_call(dict(event)) and http_ok(dict(event)):
            self.calls += 1
        else:
            return
        if self.reached_at is None and self.condition.holds(
            self.progress, self.progress - self.progress_start, self.calls
        ):
            step = event.get("step")
            self.reached_at = step if isinstance(step, int) else self.calls

    def before_call(self, call: Call) -> Ruling | None:
        if self.reached_at is None:
            return None
        return Ruling.stop(
            "ok",
            f"{self.condition} reached at step {self.reached_at} of the leg (progress "
            f"{self.progress:.3g}): the leg is over",
            condition=str(self.condition),
            progress=round(self.progress, 6),
        )
