"""The guards' pytest face: the `agentevals_budget` marker, checked at collection. A test's budget
and guards are worked out where its run is made (`runs.spec_for`, for the recorder, resume and
marathon faces alike); the watchdog's hook is in `hooks.py`.

```python
@pytest.mark.agentevals_budget(max_calls=40, max_cost_usd=0.5, stall_calls=10)
def test_agent_finishes(agentevals_recorder):
    ...
```

A test's budget is `[tool.agentevals.budget]`, then its markers' keywords (module, class, then
function: the closest wins), under `--agentevals-budget KEY=VALUE,...` (which no marker overrides).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ..errors import ConfigError
from ..markers import marks_of
from ..settings import Settings
from ..settings.budgets import BUDGET_MARKER, with_marks


class GuardsPlugin:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.settings = settings
        config.addinivalue_line(
            "markers",
            f"{BUDGET_MARKER}(**limits): this test's run budget over [tool.agentevals.budget] "
            "(max_calls=40, max_cost_usd=0.5, stall_calls=10...; see docs/guards.md)",
        )

    def pytest_collection_modifyitems(self, items: Sequence[pytest.Item]) -> None:
        """Every test's budget marker, checked at collection: a bad one stops the run naming the test."""
        for item in items:
            if item.get_closest_marker(BUDGET_MARKER) is None:
                continue
            try:
                with_marks(self.settings.budget, marks_of(item, (BUDGET_MARKER,)))
            except ConfigError as exc:
                raise pytest.UsageError(f"agentevals: {item.nodeid}: {exc}") from None
