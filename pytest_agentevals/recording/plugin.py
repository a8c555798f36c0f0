"""The recorder's pytest face: the `agentevals_recorder` fixture, which records the current test's run.
Registered by `pytest_agentevals.plugin`; its lifecycle is every layer's (`runs.py`).

```python
def test_agent_finishes(agentevals_recorder):
    my_agent("refactor")
    assert agentevals_recorder.totals["verifications"]["failed"] == 0
```
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from ..runs import opened, spec_for
from ..settings import Settings

if TYPE_CHECKING:  # the recorder loads with the first test that asks for it
    from .recorder import Recorder


class RecordingPlugin:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.settings = settings

    @pytest.fixture
    def agentevals_recorder(self, request: pytest.FixtureRequest) -> Iterator[Recorder]:
        """Records the current test's run into `<traces_dir>/<test id>.trace.jsonl`.

        Recording is on from setup to teardown: model calls through httpx/httpx2, `@tool` calls and
        harness events all land in the test's trace. A test's trace from an earlier session is
        replaced; a test that fails ends its trace `failed`. The run is guarded by the configured
        budget and the test's `agentevals_budget` marker, and its contract holds what the
        `pytest_agentevals_contract()` hooks declare. `run_agent()` starts the agent through the
        `pytest_agentevals_run_agent(run)` hooks (`run.layer == "record"`), for a test that does not
        call it itself.
        """
        from .recorder import Recorder

        item = request.node
        spec = spec_for(item, self.settings, "record", own_trace=True, agent=item.name)
        assert spec.trace is not None
        spec.trace.unlink(missing_ok=True)
        yield from opened(item, Recorder.for_spec(spec))
