"""Goldens files as pytest collectors, step cases as pytest items marked `step`.

An item is a `pytest.Function` whose function asks for the `agentevals_decide` and
`agentevals_judge` fixtures, so a conftest.py overrides them as it would any fixture, at any scope.
Its id is the file and the case: `goldens/refactor.yaml::step-12-tool-choice`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from ..errors import GoldenError
from .case import StepCase
from .judge import Judge, JudgeSpec, JudgeVerdict
from .kinds import parse_expectation
from .loader import load_goldens
from .render import StepMismatch, explain
from .runner import CaseRun, run_case
from .session import StepSession
from .yamlio import dump_yaml

SESSION_KEY = pytest.StashKey[StepSession]()
RECORD_KEY = pytest.StashKey[str]()
UPDATE_KEY = pytest.StashKey[bool]()
PAYLOAD_KEY = pytest.StashKey[dict[str, Any]]()


def _step_case(agentevals_decide: Any, agentevals_judge: Any) -> None:  # pragma: no cover
    """Stands for a step case; `StepItem.runtest` does the work. Declares the fixtures it uses."""


class GoldensCollector(pytest.File):
    """A goldens file: one item per case. A malformed file is one collection error naming the file,
    line, case and key, with no traceback."""

    def collect(self) -> Iterator[StepItem]:
        session = self.config.stash[SESSION_KEY]
        try:
            goldens = load_goldens(self.path, session.display(self.path))
        except GoldenError as exc:
            raise self.CollectError(str(exc)) from None
        for case in goldens.cases:
            yield StepItem.from_parent(self, name=case.id, callobj=_step_case, case=case)


class StepItem(pytest.Function):
    def __init__(self, *, case: StepCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.add_marker(pytest.mark.step)
        self.add_marker(pytest.mark.agentevals_step_kind(case.kind))
        if case.xfail is not None:
            self.add_marker(pytest.mark.xfail(reason=case.xfail))

    def runtest(self) -> None:
        session = self.config.stash[SESSION_KEY]
        case = self.case
        payload: dict[str, Any] = {"file": str(case.path), "case": case.id}
        self.stash[PAYLOAD_KEY] = payload
        judge = _remembering(self.funcargs["agentevals_judge"])  # type: ignore[arg-type]
        run = run_case(
            case,
            self.funcargs["agentevals_decide"],  # type: ignore[arg-type]
            session.store(case.path).exchanges(case.id),
            self.config.stash[RECORD_KEY],
            judge,
            session.prices,
            self.nodeid,
        )
        if run.cassette.new:
            payload["recorded"] = [exchange.as_data() for exchange in run.cassette.used]
        if run.outcome.verdict is not None:
            # JSON, so JUnit XML carries it readably: a judge's noise can be told from the agent's.
            self.user_properties.append(("agentevals_judge", json.dumps(run.outcome.verdict.as_data())))
        if run.outcome.ok:
            return
        if self.config.stash[UPDATE_KEY]:
            self._rebless(run, judge, payload)
            return
        raise StepMismatch(explain(self.nodeid, case.kind, run.outcome))

    def _rebless(self, run: CaseRun, judge: Judge, payload: dict[str, Any]) -> None:
        case = self.case
        try:
            new_raw = case.expect.rebless(run.decision)
        except GoldenError as exc:
            raise GoldenError(self.nodeid, f"cannot be re-blessed: {exc.problem}", exc.fix) from None
        before = dump_yaml({"expect": case.expect.raw}).splitlines()
        after = dump_yaml({"expect": new_raw}).splitlines()
        diff = "\n".join(difflib.unified_diff(before, after, f"{self.nodeid} (was)", "(now)", lineterm=""))
        payload["rebless"] = {"expect": new_raw, "diff": diff}
        self.add_report_section("call", "agentevals re-blessed", diff)
        outcome = parse_expectation(case.kind, new_raw, "expect").check(run.decision, judge)
        if not outcome.ok:  # only a judge's verdict cannot be re-blessed
            raise StepMismatch(
                explain(self.nodeid, case.kind, outcome)
                + "\n  (re-blessed the checks; the judge's verdict stands)"
            )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, StepMismatch | GoldenError):
            # The report names the case already; the message starts with what happened.
            return str(excinfo.value).removeprefix(f"{self.nodeid}: ")
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.case.kind} step case {self.case.id}"


def _remembering(judge: Judge) -> Judge:
    """The judge, asked at most once per rubric and summary (a re-check after re-blessing reuses it)."""
    verdicts: dict[tuple[JudgeSpec, str], JudgeVerdict] = {}

    def ask(spec: JudgeSpec, summary: str) -> JudgeVerdict:
        if (spec, summary) not in verdicts:
            verdicts[(spec, summary)] = judge(spec, summary)
        return verdicts[(spec, summary)]

    return ask
