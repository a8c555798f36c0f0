"""What one session of marathon tests adds up to, where the seeds' reports arrive (a plain session, or
the xdist controller): each seed's result appended to the results file as it arrives, the verdict
over each test's seeds once they have all finished.

Reports carry plain JSON (`Payload`), so a worker's seed reaches the controller the way it reaches a
plain session. Only this object writes the results file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MarathonError
from .results import RESULTS_FILE, Plan, SeedResult, append_result
from .verdict import Verdict, judge


@dataclass
class _Test:
    plan: Plan
    expected: set[int] = field(default_factory=set)
    partial: bool = False
    results: dict[int, SeedResult] = field(default_factory=dict)


def payload(
    *,
    test: str,
    seed: int,
    plan: Plan,
    expected: tuple[int, ...],
    partial: bool,
    result: SeedResult | None,
    kept: bool,
) -> dict[str, Any]:
    """What a seed's report carries to where the results are written (plain JSON)."""
    return {
        "test": test,
        "seed": seed,
        "plan": plan.to_json(),
        "expected": list(expected),
        "partial": partial,
        "result": result.to_json() if result is not None else None,
        "kept": kept,
    }


class MarathonTally:
    """Receives each seed's payload; `verdicts()` at the end. `commit`, `branch` and `run_id` are
    stamped on every new result, so every line of one session names the same commit and run."""

    def __init__(
        self,
        folder: Path,
        *,
        commit: str | None,
        branch: str | None = None,
        run_id: str | None = None,
        budget_stops: str = "exclude",
    ) -> None:
        self.folder = folder
        self.budget_stops = budget_stops
        self.results_path = folder / RESULTS_FILE
        self.commit = commit
        self.branch = branch
        self.run_id = run_id
        self.problems: list[str] = []
        self.appended = 0
        self.kept = 0
        self._tests: dict[str, _Test] = {}

    def receive(self, data: Mapping[str, Any]) -> None:
        """One seed's payload: its fresh result is appended to the results file at once (so a session
        killed later keeps it), a kept one (from an earlier session at this commit) only counted."""
        try:
            test, seed = str(data["test"]), int(data["seed"])
            entry = self._tests.setdefault(test, _Test(Plan.from_json(data["plan"])))
            entry.expected.update(int(s) for s in data.get("expected") or ())
            entry.partial = entry.partial or bool(data.get("partial"))
            raw = data.get("result")
            result = SeedResult.from_json(raw) if raw is not None else None
        except (KeyError, TypeError, ValueError) as exc:
            self.problems.append(f"a marathon seed's report could not be read: {exc}")
            return
        if result is None:
            return  # the seed never ran (its setup failed): it is missing from the verdict
        if data.get("kept"):
            self.kept += 1
        else:
            result = dataclasses.replace(result, commit=self.commit, branch=self.branch, run_id=self.run_id)
            try:
                append_result(self.results_path, result)
                self.appended += 1
            except (OSError, MarathonError) as exc:
                self.problems.append(
                    f"{test} seed {seed}: its result was not written to {self.results_path}: {exc}"
                )
        entry.results[seed] = result

    @property
    def tests(self) -> list[str]:
        return list(self._tests)

    def verdicts(self) -> list[Verdict]:
        """The verdict over each test's seeds, in the order the tests reported."""
        out: list[Verdict] = []
        for test, entry in self._tests.items():
            if not entry.results:
                self.problems.append(f"{test}: no seed has a result, so there is no verdict")
                continue
            expected = tuple(sorted(entry.expected))
            out.append(
                judge(
                    test,
                    entry.results.values(),
                    expected=expected,
                    partial=entry.partial,
                    plan=entry.plan,
                    budget_stops=self.budget_stops,
                )
            )
        return out
