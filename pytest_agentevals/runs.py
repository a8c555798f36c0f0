"""The run lifecycle's pytest side, one for every layer: a test's `RunSpec` (`spec_for`), a fixture's
run opened and closed (`opened`), and every open run of a test finished when its test function
returns (`RunPhases`, registered by `plugin.py`). The lifecycle itself is `lifecycle.py`'s; this is
shared pytest glue beside the top-level `plugin.py`, and no engine imports it (a test checks).

```python
@pytest.fixture
def agentevals_replay(self, request):
    run = ReplayRun(spec_for(request.node, settings), cassette=...)
    yield from opened(request.node, run)          # start(); yield the run; close(failed) at teardown
```

Between the two, when the test function returns or raises, `finish(error)` judges each run — the
last opened first, so a replay is judged before the recording around it ends — and its `section()`
becomes a section of the test's report. A run's failure fails the test's call phase itself.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from .hooks import AgentRun, ask_resume_agent, ask_run_agent, declared_contract, watchdog_ask
from .lifecycle import RunLifecycle, Runner, RunSpec
from .markers import marks_of
from .settings import Settings
from .settings.budgets import BUDGET_MARKER, Budget, with_marks
from .trace.naming import TRACE_PROPERTY, trace_path_for

R = TypeVar("R", bound=RunLifecycle)
RUNS_KEY = pytest.StashKey[list[RunLifecycle]]()
CALL_FAILED_KEY = pytest.StashKey[bool]()


def budget_for(item: pytest.Item, settings: Settings, markers: Sequence[str] = (BUDGET_MARKER,)) -> Budget:
    """The budget of a test: `[tool.agentevals.budget]`, then the budget keywords of its `markers`
    (the closest wins), under `--agentevals-budget` (which no marker overrides)."""
    marks = marks_of(item, markers)
    return with_marks(settings.budget, marks)


def agent_runner(item: pytest.Item, layer: str) -> Runner:
    """What starts the agent on a test's run of `layer`: the `pytest_agentevals_resume_agent` hooks
    for a resumed leg, the `pytest_agentevals_run_agent(run)` hooks (`run.layer == layer`) for the
    others — of the conftest.py files that apply to the test, or every one's for a collected
    cassette, which may lie outside the collected folders and have no conftest.py of its own."""
    if layer == "resume":
        hooks = item.ihook

        def resume(leg: Any) -> Any:
            __tracebackhide__ = True
            return ask_resume_agent(hooks, leg, item.nodeid)

        return resume
    asked = item.config.hook if layer == "replay" else item.ihook
    hook = asked.pytest_agentevals_run_agent

    def run_agent(run: Any) -> Any:
        return ask_run_agent(hook, AgentRun.of(layer, run))

    return run_agent


def spec_for(
    item: pytest.Item,
    settings: Settings,
    layer: str,
    *,
    markers: Sequence[str] = (BUDGET_MARKER,),
    budget: Budget | None = None,
    trace: Path | None = None,
    own_trace: bool = False,
    task: Any = None,
    seed: int | None = None,
    workspace: Path | None = None,
    agent: str | None = None,
) -> RunSpec:
    """A test's run of `layer`: named by its id, its agent by the test's name and started through
    the layer's hook (`agent_runner`), guarded by its budget (`budget`, or its `markers`' over the
    settings) with the watchdog asking its conftest.py files, its contract what their
    `pytest_agentevals_contract()` hooks declare. Its trace is `trace`, or with `own_trace` the
    test's own under the settings' trace folder."""
    hooks = item.ihook  # the hooks of the conftest.py files that apply to the test
    runner, watchdog, contract = agent_runner(item, layer), watchdog_ask(hooks), declared_contract(hooks)
    if own_trace:
        trace = trace_path_for(item.nodeid, settings.traces_dir)
    return RunSpec(
        name=item.nodeid,
        agent=agent if agent is not None else getattr(item, "originalname", item.name),
        task=task,
        seed=seed,
        trace=trace,
        workspace=workspace,
        budget=budget if budget is not None else budget_for(item, settings, markers),
        watchdog=watchdog,
        contract=contract,
        settings=settings,
        runner=runner,
    )


def opened(item: pytest.Item, run: R) -> Iterator[R]:
    """A fixture's run: started, handed to the test, closed at teardown (the test's failure said)."""
    item.stash.setdefault(RUNS_KEY, []).append(run)
    if run.spec.trace is not None:
        item.user_properties.append((TRACE_PROPERTY, str(run.spec.trace)))  # for the session's report
    try:
        run.start()
        yield run
    finally:
        run.close(failed=item.stash.get(CALL_FAILED_KEY, False))


class RunPhases:
    """Finishes every run a test opened when its function returns (the last opened first) and adds
    each run's section to the test's report; tells each run at teardown whether the test failed."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        pass  # registered like every face; it keeps nothing of its own (a test's runs are in its stash)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        try:
            result = yield
        except BaseException as exc:
            _finish(item, exc)
            raise
        _finish(item, None)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        if report.when == "call" and report.failed:
            item.stash[CALL_FAILED_KEY] = True  # read at teardown: a run whose test failed ends "failed"
        return report


def _finish(item: pytest.Item, error: BaseException | None) -> None:
    """Finish the test's runs, the last opened first; the first failure is raised once all are."""
    raised: BaseException | None = None
    runs: list[RunLifecycle] = item.stash.get(RUNS_KEY, [])
    for run in reversed(runs):
        try:
            run.finish(error if raised is None else raised)
        except BaseException as exc:
            raised = raised or exc
        finally:
            section = run.section()
            if section:
                item.add_report_section("call", f"agentevals {run.layer}", section)
    if raised is not None and raised is not error:
        raise raised


__all__ = ["CALL_FAILED_KEY", "RUNS_KEY", "RunPhases", "agent_runner", "budget_for", "opened", "spec_for"]
