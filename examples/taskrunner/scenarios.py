"""The example's recorded scenarios: the runs its golden step cases come from
(goldens/extract_taskrunner.py), each with the task count, the `run()` options and so the harness
settings it ran under — what goldens/conftest.py decides a case with.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .harness import HarnessConfig

SEED = 1  # every scenario's seed: the task list and the scripted model's choices

_CONFIG_FIELDS = frozenset(f.name for f in dataclasses.fields(HarnessConfig))


@dataclass(frozen=True)
class Scenario:
    tasks: int
    options: dict[str, Any] = field(default_factory=dict)  # run() keywords: HarnessConfig fields, stall_at...
    about: str = ""

    def config(self) -> HarnessConfig:
        """The harness settings of the run: `HarnessConfig` with this scenario's fields."""
        return dataclasses.replace(
            HarnessConfig(), **{k: v for k, v in self.options.items() if k in _CONFIG_FIELDS}
        )


SCENARIOS: dict[str, Scenario] = {
    "taskrunner": Scenario(
        12,
        {"compact_at": 1500},
        "12 tasks, compacting at 1500 tokens: tool choices, both compactions, the closing stop",
    ),
    "taskrunner-stall": Scenario(
        8,
        {"stall_at": 5, "stall_persists": True},
        "the model loops on one read_file: the watchdog nudges, then aborts; the supervisor escalates",
    ),
    "taskrunner-budget": Scenario(
        8, {"token_budget": 15000}, "a 15000-token budget: the harness stops when it is spent"
    ),
}


def harness_config(name: str) -> HarnessConfig:
    """The harness settings the scenario `name` (a goldens file's stem) was recorded under."""
    scenario = SCENARIOS.get(name)
    if scenario is None:
        raise KeyError(f"no taskrunner scenario {name!r}; known: {', '.join(SCENARIOS)}")
    return scenario.config()
