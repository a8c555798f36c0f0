"""A marathon's verdicts as rows for what people read: one `VerdictRow` per bar a test set, with the
verdict's own words (`met`, `below`, `above`, `inconclusive`: `verdict.py`'s). The marathon face
answers `pytest_agentevals_verdicts` with them; the report draws them (`report/verdicts.py`: the run
console's section, the markdown summary) and counts them in the pyramid table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .verdict import ABOVE, BELOW, INCONCLUSIVE, MET

VERDICT_WORDS = (MET, BELOW, ABOVE, INCONCLUSIVE)
# How a test's verdict counts in the session, as pytest counts a test: one below its bar is a failure
# (over the whole marathon), one undecided is inconclusive (never passed); a met one is not counted.
FAILED, UNDECIDED = "failed", "inconclusive"
_OLD_WORDS = {"pass": MET, "fail": BELOW}  # the 0.x rows' words, read from JSON


@dataclass(frozen=True)
class VerdictRow:
    """One bar of a marathon test, judged over its seeds: the metric's value over `n` seeds with a 95%
    interval [`low`, `high`], the threshold it is held to, and the verdict — `met`, `below` or
    `above` (the whole interval on the wrong side) or `inconclusive`. `test` is the test's id;
    `counts` how its whole verdict counts in the session (`failed`, `inconclusive`, or None), the
    same on each of its rows."""

    metric: str
    n: int
    value: float | None
    low: float | None = None
    high: float | None = None
    threshold: str = ""  # as a person reads it: ">= 0.80"
    verdict: str = INCONCLUSIVE
    note: str = ""
    test: str = ""
    counts: str | None = None

    @property
    def failed(self) -> bool:
        """Whether this bar's whole interval is on its wrong side."""
        return self.verdict in (BELOW, ABOVE)

    @property
    def fails_the_session(self) -> bool:
        """Whether its test's verdict is below a bar over the whole marathon: a failure of the layer."""
        return self.counts == FAILED

    @property
    def undecided(self) -> bool:
        """Whether its test's verdict cannot tell yet (said loudly, never counted as passed)."""
        return self.counts == UNDECIDED

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VerdictRow:
        verdict = str(data.get("verdict", INCONCLUSIVE))
        verdict = _OLD_WORDS.get(verdict, verdict)
        counts = data.get("counts")
        return cls(
            metric=str(data.get("metric", "?")),
            n=int(data.get("n", 0)),
            value=_number(data.get("value")),
            low=_number(data.get("low")),
            high=_number(data.get("high")),
            threshold=str(data.get("threshold") or ""),
            verdict=verdict if verdict in VERDICT_WORDS else INCONCLUSIVE,
            note=str(data.get("note") or ""),
            test=str(data.get("test") or ""),
            counts=counts if counts in (FAILED, UNDECIDED) else None,
        )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
