"""Re-record the framework examples' cassettes: `python cassettes/record_frameworks.py`.

Each example (examples/notes_graph, examples/notes_pydantic) runs its task against the simulated
model on loopback (no key, no network) and is recorded into `cassettes/<name>.trace.jsonl`, the task
in its run_start (`{"agent": ..., "notes": N}`), which is what starts it again in a replay
(cassettes/conftest.py). Needs pytest-agentevals[langgraph] and [pydantic-ai].
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import pytest_agentevals as ae  # noqa: E402
from examples import notes_run  # noqa: E402
from pytest_agentevals.fileio import atomic_path  # noqa: E402

RUNS: dict[str, dict[str, Any]] = {
    "notes-graph-3-notes": {"agent": "notes_graph", "notes": 3},
    "notes-pydantic-3-notes": {"agent": "notes_pydantic", "notes": 3},
}


def record(name: str, task: dict[str, Any], folder: Path = HERE) -> Path:
    path = folder / f"{name}.trace.jsonl"
    with (
        atomic_path(path) as scratch,
        tempfile.TemporaryDirectory(prefix="notes-") as workspace,
        ae.Recorder(scratch, agent=task["agent"], task=task),
    ):
        written = notes_run.run_task(task, workspace)
    print(f"{path.name}: {written} notes")
    return path


if __name__ == "__main__":
    for run_name, run_task in RUNS.items():
        record(run_name, run_task)
