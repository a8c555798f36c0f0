"""A simulated LLM judge of known noise: a policy for `SimServer` that grades as a judge does, then
flips a seeded share of its verdicts and garbles another share of its replies.

```python
from pytest_agentevals.sim import NoisyJudge, SimServer

judge = NoisyJudge(flip=0.2, garble=0.05, seed=7)
with SimServer(judge) as sim:
    ...  # point the judge's client at sim.url; judge.injected says what noise it put in
```

It reads the prompt `pytest_agentevals.step.anthropic_judge` sends: a last user message
`Rubric:\\n<rubric>\\n\\nSummary:\\n<summary>`. Its true verdict is a plain rule, so a test can set it:
the summary passes when it holds every `backticked` term of the rubric (a rubric with none passes
whatever the summary). Then, one seeded draw per request: with probability `garble` the reply holds
no verdict at all (a judge's unparseable answer), else with probability `flip` it is the opposite
verdict. What it did is counted per (rubric, summary) in `injected`, so a measurement of the judge
can be checked against the noise actually put in, not only against the rates asked for.
Requests that are not a judge's go to `other` (a script or policy of their own), or are refused.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import SimError
from .script import Fault, Reply, Script, ScriptPlayer, SimRequest

_PROMPT = re.compile(r"\ARubric:\n(?P<rubric>.*?)\n\nSummary:\n(?P<summary>.*)\Z", re.S)
_TERM = re.compile(r"`([^`]+)`")
GARBLED = "Hard to say; it mostly does what was asked, I think."


@dataclass
class Injected:
    """What the judge did for one (rubric, summary): how often asked, and how often it flipped the
    true verdict or garbled its reply."""

    truth: bool
    asked: int = 0
    flipped: int = 0
    garbled: int = 0


def holds_every_term(rubric: str, summary: str) -> bool:
    """The simulated judge's true verdict: every `backticked` term of the rubric is in the summary."""
    return all(term in summary for term in _TERM.findall(rubric))


class NoisyJudge:
    """A policy: a judge's reply to each judge request, with seeded flips and garbled replies."""

    def __init__(
        self,
        flip: float = 0.0,
        garble: float = 0.0,
        seed: int = 0,
        *,
        truth: Callable[[str, str], bool] = holds_every_term,
        other: Script | None = None,
    ) -> None:
        for name, rate in (("flip", flip), ("garble", garble)):
            if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= rate <= 1.0:
                raise SimError(f"NoisyJudge {name}={rate!r}: a share of replies is a number from 0 to 1")
        self.flip = float(flip)
        self.garble = float(garble)
        self.seed = seed
        self.truth = truth
        self.injected: dict[tuple[str, str], Injected] = {}
        self._rng = random.Random(seed)
        self._other = ScriptPlayer(other) if other is not None else None
        self._lock = threading.Lock()

    def __call__(self, request: SimRequest) -> Reply | Fault:
        found = _PROMPT.match(request.last_text)
        if found is None:
            if self._other is not None:
                return self._other.next(request)
            return Fault.error(
                400,
                "invalid_request_error",
                "the simulated judge grades only a judge's prompt (Rubric: ... Summary: ...)",
            )
        rubric, summary = found.group("rubric"), found.group("summary")
        with self._lock:  # one draw per request, in the order they arrive
            case = self.injected.setdefault((rubric, summary), Injected(self.truth(rubric, summary)))
            case.asked += 1
            garbled = self._rng.random() < self.garble
            flipped = not garbled and self._rng.random() < self.flip
            case.garbled += garbled
            case.flipped += flipped
        if garbled:
            return Reply.text(GARBLED)
        said = case.truth != flipped
        reason = "the summary holds what the rubric asks" if said else "the rubric's terms are missing"
        return Reply.text(f'{{"pass": {"true" if said else "false"}, "reason": "{reason}"}}')
