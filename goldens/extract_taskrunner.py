"""Record the example agent's runs and extract its golden step cases: how goldens/taskrunner*.yaml
were made. Run from the repository root:

    python goldens/extract_taskrunner.py [--force]

It records three deterministic runs of examples.taskrunner against the simulated model (a long run
with compactions, a run whose model stalls so the watchdog fires, a run that spends its token
budget) into .agentevals/traces/, then runs, for each, the same extraction as

    agentevals step extract TRACE --steps ... --kind ... --out goldens/NAME.yaml

The expectations were then edited by hand (matchers, facts to keep): this script refuses to
overwrite existing goldens unless --force, which throws those edits away.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the repository's packages, examples included

from examples.taskrunner import run  # noqa: E402
from examples.taskrunner.scenarios import SCENARIOS, SEED  # noqa: E402
from pytest_agentevals import Recorder  # noqa: E402
from pytest_agentevals.step.extract import extract  # noqa: E402
from pytest_agentevals.step.store import store_path  # noqa: E402
from pytest_agentevals.step.write import write_cases  # noqa: E402

# The runs (examples/taskrunner/scenarios.py, which goldens/conftest.py decides with) and, for each,
# the [(steps, kinds), ...] to take.
SELECTIONS: dict[str, list[tuple[tuple[int, ...], tuple[str, ...]]]] = {
    "taskrunner": [((1, 2, 3, 16, 18, 41), ()), ((), ("compaction",))],
    "taskrunner-stall": [((8, 12, 36), ("escalation",))],
    "taskrunner-budget": [((), ("escalation",))],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="overwrite existing goldens (loses hand edits)")
    args = parser.parse_args()
    traces = ROOT / ".agentevals" / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    for name, selections in SELECTIONS.items():
        scenario = SCENARIOS[name]
        out = ROOT / "goldens" / f"{name}.yaml"
        if out.exists() and not args.force:
            print(f"{out.relative_to(ROOT)} exists; kept (--force overwrites it)")
            continue
        out.unlink(missing_ok=True)
        store_path(out).unlink(missing_ok=True)
        trace = traces / f"{name}.trace.jsonl"
        trace.unlink(missing_ok=True)
        options, tasks = dict(scenario.options), scenario.tasks
        with Recorder(trace, agent="taskrunner", seed=SEED):
            result = run(tasks, seed=SEED, **options)
        label = f"examples.taskrunner run({tasks}, seed={SEED}, {_args(options)})"
        points = sorted(
            (point for steps, kinds in selections for point in extract(trace, steps, kinds)),
            key=lambda point: point.line,
        )
        written = write_cases(out, points, label, scenario=name, description=scenario.about)
        print(f"{result.line()}\n  -> {out.relative_to(ROOT)}: {', '.join(written.case_ids)}")
    return 0


def _args(options: dict[str, object]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in options.items())


if __name__ == "__main__":
    sys.exit(main())
