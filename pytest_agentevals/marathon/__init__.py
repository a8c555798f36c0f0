"""The marathon layer: seeded end-to-end runs, judged over the seeds with honest intervals.

The engine works from plain Python and from `agentevals marathon`; `plugin.py` is its pytest face
(registered by `plugin.py`, imported by no module here).

- `seeds`: the seeds a marker plans and a session or CI job selects (`0-4`, `1,3`, the shard `2/5`);
- `run`: one seed's run — its recorder, guards, the seeded task handed to the agent, its supervisor;
- `results`: the results file (JSON Lines, append-only, one line per test, seed and commit);
- `estimators`: pass@k and pass^k, seeded bootstrap intervals, the exact McNemar test;
- `verdict`: the verdict over a test's seeds, each bar judged on its interval;
- `render`: the terminal table, Markdown and JSON;
- `compare`, `merge`: two commits' runs paired by test and seed; several CI jobs' results in one.

See docs/marathon.md.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from ..settings.seeds import SeedSelection, parse_selection, planned_seeds
    from .plan import SeedChoice, plan_seeds
    from .results import RESULTS_FILE, Plan, SeedResult, TornResultsWarning, append_result, read_results
    from .rows import VerdictRow
    from .run import SeedRun
    from .tally import MarathonTally
    from .verdict import THRESHOLDS, Estimate, Judgement, Threshold, Verdict, judge

__all__ = [
    "RESULTS_FILE",
    "THRESHOLDS",
    "Estimate",
    "Judgement",
    "MarathonTally",
    "Plan",
    "SeedChoice",
    "SeedResult",
    "SeedRun",
    "SeedSelection",
    "Threshold",
    "TornResultsWarning",
    "Verdict",
    "VerdictRow",
    "append_result",
    "judge",
    "parse_selection",
    "plan_seeds",
    "planned_seeds",
    "read_results",
]

__getattr__, __dir__ = attach(__name__, __file__)
