"""Re-record the example agent's cassettes: `python cassettes/record_examples.py`.

Each run of `examples.taskrunner` plays against the seeded simulated model on loopback (no key, no
network) and is recorded into `cassettes/<name>.trace.jsonl`; tests/replay/test_example.py replays
them offline. The task written into each trace's run_start is what starts the agent again:
`{"agent": "taskrunner", "tasks": N, "seed": S, "stall_at": K}` (see `start` below).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import pytest_agentevals as ae  # noqa: E402
from examples import taskrunner  # noqa: E402
from pytest_agentevals.fileio import atomic_path  # noqa: E402

# name -> the run's task. The stall is the incident: the model loops on one read_file from step 4,
# and the watchdog must catch it (the supervisor restarts from the last checkpoint).
RUNS: dict[str, dict[str, Any]] = {
    "taskrunner-3-tasks": {"agent": "taskrunner", "tasks": 3, "seed": 1, "stall_at": None},
    "incident-taskrunner-stall": {"agent": "taskrunner", "tasks": 3, "seed": 2, "stall_at": 4},
}


def record(name: str, task: dict[str, Any], folder: Path = HERE) -> Path:
    path = folder / f"{name}.trace.jsonl"
    with (
        atomic_path(path) as scratch,
        tempfile.TemporaryDirectory(prefix="taskrunner-") as workspace,
        ae.Recorder(scratch, agent="taskrunner", seed=task["seed"], task=task),
    ):
        result = taskrunner.run(
            task["tasks"], seed=task["seed"], stall_at=task["stall_at"], workspace=workspace
        )
    print(f"{path.name}: {result.line()}")
    return path


if __name__ == "__main__":
    for run_name, run_task in RUNS.items():
        record(run_name, run_task)
