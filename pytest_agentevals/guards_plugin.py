"""The guards' pytest face: the `agentevals_budget` marker, the `pytest_agentevals_watchdog` hook, and
the guards a test's recorder runs under.

```python
@pytest.mark.agentevals_budget(max_calls=40, max_cost_usd=0.5, stall_calls=10)
def test_agent_finishes(agentevals_recorder):
    ...
```

A test's budget is `[tool.agentevals.budget]`, then its markers' keywords (module, class, then
function: the closest wins), under `--agentevals-budget KEY=VALUE,...` (which no marker overrides).
The resume and marathon layers give their own markers' budget keywords the same treatment with
`budget_for(item, settings, markers=("resume",))`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from .errors import ConfigError
from .recording.guards import Budget, Guard, guards_for, split_keywords
from .recording.recorder import Recorder
from .settings import Settings

MARKER = "agentevals_budget"


class GuardsHookspecs:
    @pytest.hookspec(firstresult=True)
    def pytest_agentevals_watchdog(self, run: Recorder, reason: str) -> bool | None:
        """The watchdog found no verified progress for too long: go on with the run?

        Called after the watchdog wrote its `watchdog` event (action `ask`) and fsynced the trace,
        before the held model request leaves. `run` is the test's `Recorder` (its `path`, `steps`,
        `totals`, `last_checkpoint`); `reason` says how long the run went without progress. Return
        True to grant the run another window of calls; False or None (no implementation) stops it as
        `stalled`. An exception here ends the run as `error`, with its traceback in the trace.
        """
        return None


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(GuardsHookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(**limits): this test's run budget over [tool.agentevals.budget] "
        "(max_calls=40, max_cost_usd=0.5, stall_calls=10...; see docs/guards.md)",
    )


def budget_for(item: pytest.Item, settings: Settings, markers: Sequence[str] = (MARKER,)) -> Budget:
    """The budget of a test: the configured one with the budget keywords of `markers` applied
    (farthest first, so the function's marker wins over its class's and module's). Keywords of other
    markers that are not budget keys are left to their layer; `agentevals_budget` takes only keys."""
    budget = settings.budget
    for name in markers:
        for marker in reversed(list(item.iter_markers(name))):
            if name == MARKER and marker.args:
                raise ConfigError(
                    f"@pytest.mark.{MARKER}",
                    "takes keywords only",
                    "write e.g. agentevals_budget(max_calls=40)",
                )
            keywords = dict(marker.kwargs) if name == MARKER else split_keywords(marker.kwargs)[0]
            budget = budget.with_keywords(keywords, f"@pytest.mark.{name}")
    return budget


def guards_for_item(item: pytest.Item, settings: Settings, markers: Sequence[str] = (MARKER,)) -> list[Guard]:
    """The guards a test's run is recorded under; the watchdog asks the `pytest_agentevals_watchdog`
    hook."""
    config = item.config

    def ask(run: Any, reason: str) -> Any:
        return config.hook.pytest_agentevals_watchdog(run=run, reason=reason)

    return guards_for(budget_for(item, settings, markers), ledger=settings.ledger, ask=ask)


def check_markers(items: Sequence[pytest.Item], settings: Settings) -> None:
    """Every test's budget marker, checked at collection: a bad one stops the run naming the test."""
    for item in items:
        if item.get_closest_marker(MARKER) is None:
            continue
        try:
            budget_for(item, settings)
        except ConfigError as exc:
            raise pytest.UsageError(f"agentevals: {item.nodeid}: {exc}") from None
