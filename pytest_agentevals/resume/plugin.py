"""The resume layer's pytest face: the `resume` marker and the `agentevals_resume` fixture; it hands
off to the engine (`run.py`) through the one run lifecycle (`runs.py`). Registered by
`pytest_agentevals.plugin`.

```python
@pytest.mark.resume("taskrunner-after-compaction", until="progress>=0.6", max_calls=80)
def test_next_leg_after_compaction(agentevals_resume):
    result = agentevals_resume.run_agent()        # the harness boots from the checkpoint
    assert agentevals_resume.phase.verified_gain > 0
```

(`agentevals_checkpoint`, the fixture's 0.x name, still works in this release, with a deprecation
warning.)

`@pytest.mark.resume(fixture, *, until=None, mode="live"|"replayed", contract_policy=, contract_tolerate=,
max_calls=, max_tokens=, max_cost_usd=, max_seconds=, ...)` is checked at collection (`RESUME`, a
`MarkerSpec`): the fixture's name, an `until` condition (`until.py`), the mode, the contract policy and
tolerances (settings `contract_policy`, `contract_tolerate`), and any budget key of docs/guards.md for
the leg. A bare marker only tags a test as the resume layer's.

The hooks it asks (`pytest_agentevals_resume_agent`, `pytest_agentevals_contract`) are declared in
`hooks.py`, so every face that boots from a checkpoint — this layer's fixture, the marathon layer's
supervisor restarting a crashed seed — can ask them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import AgentEvalsDeprecationWarning, AgentEvalsError, ConfigError
from ..markers import MarkerSpec
from ..runs import opened, spec_for
from ..settings import Settings
from ..settings.budgets import KEYS as BUDGET_KEYS
from ..settings.budgets import check

if TYPE_CHECKING:  # the engine loads with the first resume of the session
    from .run import ResumeRun


def _name(where: str, raw: Any) -> str:
    if isinstance(raw, str) and raw.strip():
        return raw
    raise ConfigError(where, f"{raw!r} is not a fixture name", "give the name of a folder under fixtures/")


def _mode(where: str, raw: Any) -> str:
    from .run import MODES

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


RESUME = MarkerSpec(
    "resume", positional=("fixture",), keywords=_keywords, settings=("contract_policy", "contract_tolerate")
)


class ResumeLayer:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.settings = settings

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        RESUME.check(session, items, self.settings)

    @pytest.fixture
    def agentevals_resume(self, request: pytest.FixtureRequest) -> Iterator[ResumeRun]:
        """The test's checkpoint, booted from `@pytest.mark.resume("NAME", ...)`: the fixture's
        workspace restored into the test's own temporary folder, the contract checked, the state
        loaded, and the leg's recorder running with its guards. `run_agent()` runs the next leg through
        the `pytest_agentevals_resume_agent` hook; `phase` holds its metrics."""
        from ..contract import ContractDriftWarning, table
        from .run import ResumeRun

        item = request.node
        marked = RESUME.of(item)
        name = marked.values.get("fixture") if marked is not None else None
        if marked is None or name is None:
            raise AgentEvalsError(
                f"{item.nodeid}: agentevals_resume boots a checkpoint fixture: mark the test "
                '@pytest.mark.resume("NAME") with the name of a folder under '
                f"{self.settings.fixtures_dir.name}/ (agentevals resume list shows them)"
            )
        if "agentevals_recorder" in request.fixturenames:
            raise AgentEvalsError(
                f"{item.nodeid}: agentevals_resume records the leg itself (its trace is "
                "phase.trace); drop the agentevals_recorder fixture from this test"
            )
        workspace = request.getfixturevalue("tmp_path") / "workspace"
        spec = spec_for(
            item, marked.settings, "resume", markers=("resume",), own_trace=True, workspace=workspace
        )
        leg = ResumeRun(spec, name, mode=marked.values.get("mode", "live"), until=marked.values.get("until"))
        for run in opened(item, leg):
            if leg.drifts:
                from ..trace.terminal import safe  # the recorded values come from the fixture

                warnings.warn(
                    ContractDriftWarning(
                        safe(f"{leg.fixture.where}: the contract drifted:\n{table(leg.drifts)}")
                    ),
                    stacklevel=1,
                )
            yield run

    @pytest.fixture
    def agentevals_checkpoint(self, request: pytest.FixtureRequest) -> Any:
        """The 0.x name of `agentevals_resume` (it goes in the next release)."""
        warnings.warn(
            AgentEvalsDeprecationWarning(
                f"{request.node.nodeid}: the agentevals_checkpoint fixture is the 0.x name of "
                "agentevals_resume; ask for agentevals_resume (the old name goes in the next release)"
            ),
            stacklevel=1,
        )
        return request.getfixturevalue("agentevals_resume")
