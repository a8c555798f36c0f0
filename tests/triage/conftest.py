"""The planted-mistake fixture, recorded once per session: the example agent with one decisive flaw
(examples/taskrunner/planted.py) over a few seeds, some meeting the flaw and some not."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.taskrunner import planted

TASKS = 10
# Seeds whose task list holds exactly one task the flaw follows (task 8, 8 and 7), and seeds with none.
FAILING = (7, 13, 20)
PASSING = (0, 5, 6, 22, 24)


@pytest.fixture(scope="session")
def planted_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, planted.PlantedRun]:
    folder: Path = tmp_path_factory.mktemp("planted")
    return {run.seed: run for run in planted.record_runs(folder, FAILING + PASSING, TASKS)}
