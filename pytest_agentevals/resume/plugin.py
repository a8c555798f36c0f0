"""The resume layer's pytest face: the `resume` marker, the `agentevals_checkpoint` fixture and the
hooks; it hands off to the engine (`session.py`). Registered by `pytest_agentevals.plugin`.

```python
@pytest.mark.resume("taskrunner-after-compaction", until="progress>=0.6", max_calls=80)
def test_next_leg_after_compaction(agentevals_checkpoint):
    result = agentevals_checkpoint.run_agent()        # the harness boots from the checkpoint
    assert agentevals_checkpoint.phase.verified_gain > 0
```

`@pytest.mark.resume(fixture, *, until=None, mode="live"|"replayed", contract=, tolerate=,
max_calls=, max_tokens=, max_cost_usd=, max_seconds=, ...)` is checked at collection (`RESUME`, a
`MarkerSpec`): the fixture's name, an `until` condition (`until.py`), the mode, the contract policy and
tolerances (settings `contract_policy`, `contract_tolerate`), and any budget key of docs/guards.md for
the leg. A bare marker only tags a test as the resume layer's.

The hooks it asks (`pytest_agentevals_resume_agent`, `pytest_agentevals_contract`) are declared in
`hooks.py`, so every face that boots from a checkpoint — this layer's fixture, the marathon layer's
supervisor restarting a crashed seed — can ask them.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import AgentEvalsError, ConfigError
from ..faces import MarkerSpec, budget_for, declared_contract, guards_for_item
from ..hooks import implementations
from ..settings import Settings
from ..settings.budgets import KEYS as BUDGET_KEYS
from ..settings.budgets import check
from ..trace.naming import TRACE_PROPERTY

if TYPE_CHECKING:  # the engine loads with the first resume of the session
    from .session import ResumeSession


def _name(where: str, raw: Any) -> str:
    if isinstance(raw, str) and raw.strip():
        return raw
    raise ConfigError(where, f"{raw!r} is not a fixture name", "give the name of a folder under fixtures/")


def _mode(where: str, raw: Any) -> str:
    from .session import MODES

    if raw not in MODES:
        raise ConfigError(where, f"{raw!r} is not allowed", "use one of: " + ", ".join(MODES))
    return str(raw)


def _budget_key(key: str) -> Callable[[str, Any], Any]:
    def parse(where: str, raw: Any) -> Any:
        return None if raw is None else check(where, key, raw)

    return parse


def _keywords() -> dict[str, Callable[[str, Any], Any]]:
    from .until import Condition

    return {
        "fixture": _name,
        "until": Condition.parse,
        "mode": _mode,
        **{key: _budget_key(key) for key in BUDGET_KEYS},
    }


RESUME = MarkerSpec("resume", positional=("fixture",), keywords=_keywords, settings=("contract", "tolerate"))
SESSION_KEY = pytest.StashKey["ResumeSession"]()


class ResumeLayer:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.settings = settings

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        RESUME.check(session, items, self.settings)

    @pytest.fixture
    def agentevals_checkpoint(self, request: pytest.FixtureRequest) -> Iterator[ResumeSession]:
        """The test's checkpoint, booted from `@pytest.mark.resume("NAME", ...)`: the fixture's
        workspace restored into the test's own temporary folder, the contract checked, the state
        loaded, and the leg's recorder running with its guards. `run_agent()` runs the next leg through
        the `pytest_agentevals_resume_agent` hook; `phase` holds its metrics."""
        from ..contract import ContractDriftWarning, table, tolerances
        from ..trace.naming import trace_path_for
        from .session import ResumeSession
        from .store import open_fixture

        item = request.node
        marked = RESUME.of(item)
        name = marked.values.get("fixture") if marked is not None else None
        if marked is None or name is None:
            raise AgentEvalsError(
                f"{item.nodeid}: agentevals_checkpoint boots a checkpoint fixture: mark the test "
                '@pytest.mark.resume("NAME") with the name of a folder under '
                f"{self.settings.fixtures_dir.name}/ (agentevals resume list shows them)"
            )
        if "agentevals_recorder" in request.fixturenames:
            raise AgentEvalsError(
                f"{item.nodeid}: agentevals_checkpoint records the leg itself (its trace is "
                "phase.trace); drop the agentevals_recorder fixture from this test"
            )
        settings = marked.settings
        fixture = open_fixture(name, settings.fixtures_dir, settings.rootdir)
        mode = marked.values.get("mode", "live")
        budget = budget_for(item, settings, markers=("resume",))
        if mode == "replayed":
            budget = dataclasses.replace(budget, max_daily_cost_usd=None)  # replayed calls cost nothing
        hooks = item.ihook  # the hooks of the conftest.py files that apply to the test

        def runner(checkpoint: ResumeSession) -> Any:
            __tracebackhide__ = True
            result = hooks.pytest_agentevals_resume_agent(checkpoint=checkpoint)
            takers = implementations(hooks.pytest_agentevals_resume_agent)
            if result is None and takers:
                raise AgentEvalsError(
                    f"{item.nodeid}: every pytest_agentevals_resume_agent hook ({', '.join(takers)}) "
                    f"returned None for the checkpoint {checkpoint.name!r}: a hook that starts the agent "
                    "returns its result (any value but None); None means the checkpoint's agent is not "
                    "that hook's"
                )
            return result

        workspace = request.getfixturevalue("tmp_path") / "workspace"
        trace = trace_path_for(item.nodeid, settings.trace_dir)
        item.user_properties.append((TRACE_PROPERTY, str(trace)))  # the leg is in the session's report
        session = ResumeSession(
            fixture,
            workspace=workspace,
            trace=trace,
            mode=mode,
            until=marked.values.get("until"),
            guards=guards_for_item(item, settings, budget=budget),
            declared=declared_contract(item),
            policy=settings.contract_policy,
            tolerate=tolerances("contract_tolerate", settings.contract_tolerate),
            runner=runner,
            label=item.nodeid,
            settings=settings,
        )
        item.stash[SESSION_KEY] = session
        try:
            session.boot()
            if session.drifts:
                from ..trace.terminal import safe  # the recorded values come from the fixture

                warnings.warn(
                    ContractDriftWarning(
                        safe(f"{fixture.where}: the contract drifted:\n{table(session.drifts)}")
                    ),
                    stacklevel=1,
                )
            yield session
        finally:
            session.close()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        try:
            return (yield)
        finally:
            session = item.stash.get(SESSION_KEY, None)
            if session is not None:
                item.add_report_section("call", "agentevals resume", self.section(session))

    @staticmethod
    def section(session: ResumeSession) -> str:
        from ..contract import table

        fixture = session.fixture
        lines = [
            f"resumed {fixture.name} (sha256 {fixture.sha256[:12]}, step {fixture.step} of run "
            f"{session.lineage.get('run_id')}, progress {session.progress:.3g}) in {session.mode} mode"
        ]
        if session.drifts:
            lines.append("contract drift:\n" + table(session.drifts))
        lines.append(
            session.phase.summary() if session.ran else f"the leg did not run; trace {session.trace}"
        )
        from ..trace.terminal import safe

        return safe("\n".join(lines))  # names and contract values come from a fixture
