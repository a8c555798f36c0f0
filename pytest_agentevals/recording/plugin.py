"""The recorder's pytest face: the `agentevals_recorder` fixture, which records the current test's run,
and the one hook that tells the recorder a test failed. Registered by `pytest_agentevals.plugin`.

```python
def test_agent_finishes(agentevals_recorder):
    my_agent("refactor")
    assert agentevals_recorder.totals["verifications"]["failed"] == 0
```
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest

from ..settings import Settings

CALL_FAILED_KEY = pytest.StashKey[bool]()


class RecordingPlugin:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.settings = settings

    @pytest.fixture
    def agentevals_recorder(self, request: pytest.FixtureRequest) -> Iterator[object]:
        """Records the current test's run into `<trace_dir>/<test id>.trace.jsonl`.

        Recording is on from setup to teardown: model calls through httpx/httpx2, `@tool` calls and
        harness events all land in the test's trace. A test's trace from an earlier session is
        replaced. The run is guarded by the configured budget and the test's `agentevals_budget`
        marker, and its contract holds what the `pytest_agentevals_contract()` hooks declare.
        """
        from ..faces import declared_contract, guards_for_item
        from ..trace.naming import TRACE_PROPERTY, trace_path_for
        from .factory import recorder_for

        item = request.node
        path = trace_path_for(item.nodeid, self.settings.trace_dir)
        path.unlink(missing_ok=True)
        item.user_properties.append((TRACE_PROPERTY, str(path)))
        recorder = recorder_for(
            path,
            self.settings,
            agent=item.name,
            guards=guards_for_item(item, self.settings),
            contract=declared_contract(item),
        )
        with recorder:
            yield recorder
            if recorder.status is None and item.stash.get(CALL_FAILED_KEY, False):
                recorder.end("failed")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        if report.when == "call" and report.failed:
            # Read by the fixture at teardown: a recorded test that failed ends its trace as "failed".
            item.stash[CALL_FAILED_KEY] = True
        return report
