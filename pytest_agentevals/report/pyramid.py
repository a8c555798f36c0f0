"""The pyramid table at the end of a pytest run: per layer, outcomes and time spent.

A test's layer and what each attempt of it ended as are read as the history reads them
(`history/outcome.py`): the last attempt of a rerun test decides, and a quarantined test counts as
what it really did (a pass, or a failure the quarantine kept from failing the session).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from ..history.model import PASSED, SKIPPED
from ..history.outcome import Attempt, Attempts
from ..layers import LAYER_NAMES


@dataclass
class LayerTally:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    quarantined: int = 0  # of the failed: quarantined tests (they did not fail the session)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped


class PyramidSummary:
    """Tallies reports as they arrive (on the controller under xdist) and prints the table."""

    def __init__(self) -> None:
        self.tallies: dict[str, LayerTally] = {name: LayerTally() for name in LAYER_NAMES}
        self._attempts = Attempts()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        attempt = self._attempts.add(report)
        if attempt is not None:
            self._count(attempt)

    def _count(self, attempt: Attempt) -> None:
        layer = attempt.layer
        if layer is None:
            return
        tally = self.tallies[layer]
        tally.seconds += attempt.duration
        if attempt.rerun:  # the test runs again: its last attempt decides
            return
        if attempt.outcome == PASSED:
            tally.passed += 1
        elif attempt.outcome == SKIPPED:
            tally.skipped += 1
        else:
            tally.failed += 1
            tally.quarantined += attempt.quarantined

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for attempt in self._attempts.unfinished():  # e.g. a crashed xdist worker's last test
            self._count(attempt)
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
            if tally.quarantined:
                line += f"  ({tally.quarantined} of the failed quarantined)"
            red = tally.failed > tally.quarantined
            terminalreporter.write_line(line, red=red, green=not red)
