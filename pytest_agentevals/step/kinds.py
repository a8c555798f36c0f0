"""The kinds of step case and the expectation each one is checked with."""

from __future__ import annotations

from typing import Any

from ..errors import GoldenError
from .expect_compaction import Compaction
from .expect_escalation import EscalationExpectation
from .expect_tools import ToolChoice, Trajectory
from .expectation import Expectation

KINDS: dict[str, type[Expectation]] = {
    cls.kind: cls for cls in (ToolChoice, Trajectory, Compaction, EscalationExpectation)
}
KIND_NAMES: tuple[str, ...] = tuple(KINDS)


def parse_expectation(kind: str, raw: Any, where: str) -> Expectation:
    """The expectation of a case of `kind`, from its `expect:` mapping."""
    cls = KINDS.get(kind)
    if cls is None:
        raise GoldenError(where, f"unknown kind {kind!r}", "use one of: " + ", ".join(KIND_NAMES))
    return cls.parse(raw, where)
