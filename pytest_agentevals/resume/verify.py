"""Checking fixtures whole, the merge gate (`agentevals resume verify`): every file against its
SHA-256, the format, the state, the workspace archive, the traces, and the contract's Python and
package versions against this environment (the keys the harness declares, and those its requests
show, are checked when a test resumes the fixture)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..contract import Drift, show, tolerances
from ..errors import CheckpointError
from ..settings import Settings
from .fixture import MANIFEST, Fixture, read_events
from .store import incomplete, locate, names


@dataclass
class FixtureCheck:
    """What verifying one fixture folder found. `drifts` and `checked_at_resume` are None when there
    was no fixture to compare (its manifest missing, or unreadable)."""

    name: str
    folder: Path
    problems: list[str]
    drifts: list[Drift] | None = None
    checked_at_resume: list[str] | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def check_fixture(fixture: Fixture, settings: Settings) -> tuple[list[str], list[Drift]]:
    """Every problem of one fixture (empty when it is whole), and its contract's drift."""
    problems: list[str] = []
    for name in fixture.manifest["files"]:
        try:
            fixture.file(name)
        except CheckpointError as exc:
            problems.append(exc.problem)
    if not problems:  # a file that is not what the manifest vouches for is not read any further
        for step in (
            fixture.state,
            lambda: fixture.archive().check(),
            fixture.events,
            _continuation(fixture),
        ):
            try:
                step()
            except CheckpointError as exc:
                problems.append(exc.problem + (f" ({exc.fix})" if exc.fix else ""))
    tolerate = tolerances("contract_tolerate", settings.contract_tolerate)
    drifts = [] if settings.contract_policy == "skip" else fixture.drift(tolerate=tolerate, harness=False)
    if settings.contract_policy == "fail":
        for drift in drifts:
            if not drift.tolerated:
                problems.append(
                    f"contract drift: {drift.key} recorded {show(drift.recorded)}, now {show(drift.now)} "
                    f"({drift.severity})"
                )
    return problems, drifts


def _continuation(fixture: Fixture) -> Callable[[], object]:
    def read() -> object:
        return read_events(fixture.continuation(), fixture.where) if fixture.has_continuation else None

    return read


def verify(settings: Settings, given: Sequence[str] = (), rootdir: Path | None = None) -> list[FixtureCheck]:
    """The fixtures named (names, or paths from `rootdir`), else every one under the fixtures folder
    with its incomplete folders too (an interrupted extraction fails the gate)."""
    fixtures_dir = settings.fixtures_dir
    folders = (
        [locate(name, fixtures_dir, rootdir) for name in given]
        if given
        else [fixtures_dir / name for name in names(fixtures_dir)]
    )
    checks: list[FixtureCheck] = []
    for folder in folders:
        try:
            fixture = Fixture.open(folder)
        except CheckpointError as exc:
            checks.append(FixtureCheck(folder.name, folder, [str(exc)]))
            continue
        problems, drifts = check_fixture(fixture, settings)
        later = [key for key in fixture.contract if not key.startswith(("python", "packages."))]
        checks.append(FixtureCheck(fixture.name, folder, problems, drifts, later))
    if not given:
        for name in incomplete(fixtures_dir):
            problem = f"no {MANIFEST}: not a whole fixture (an interrupted extraction?)"
            checks.append(FixtureCheck(name, fixtures_dir / name, [problem]))
    return checks
