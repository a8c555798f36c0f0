"""The pyramid table at the end of a pytest run: per layer, outcomes and time spent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ..layers import LAYER_NAMES, layer_of


@dataclass
class LayerTally:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    nodeids: set[str] = field(default_factory=set)

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped


def report_layer(report: pytest.TestReport) -> str | None:
    """The layer of the test a report is about, read from its keywords (markers travel with it
    from xdist workers to the controller)."""
    keywords: Any = report.keywords
    return layer_of({name for name in LAYER_NAMES if name in keywords})


class PyramidSummary:
    """Tallies reports as they arrive (on the controller under xdist) and prints the table."""

    def __init__(self) -> None:
        self.tallies: dict[str, LayerTally] = {name: LayerTally() for name in LAYER_NAMES}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        layer = report_layer(report)
        if layer is None or report.outcome == "rerun":  # type: ignore[comparison-overlap]
            # pytest-rerunfailures reports the attempts before the last as "rerun": the last decides.
            return
        tally = self.tallies[layer]
        tally.seconds += report.duration
        tally.nodeids.add(report.nodeid)
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.passed and not hasattr(report, "wasxfail"):
                tally.passed += 1
            elif report.skipped:
                tally.skipped += 1
            else:
                tally.failed += 1
        elif report.when == "teardown" and report.failed:
            tally.failed += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not any(tally.total for tally in self.tallies.values()):
            return
        terminalreporter.write_sep("=", "agentevals pyramid")
        terminalreporter.write_line(f"{'layer':<10}{'passed':>8}{'failed':>8}{'skipped':>9}{'time':>10}")
        # The top of the pyramid first, as the pyramid is drawn.
        for name in reversed(LAYER_NAMES):
            tally = self.tallies[name]
            if not tally.total:
                continue
            line = f"{name:<10}{tally.passed:>8}{tally.failed:>8}{tally.skipped:>9}{tally.seconds:>9.2f}s"
            terminalreporter.write_line(line, red=bool(tally.failed), green=not tally.failed)
