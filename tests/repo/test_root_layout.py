"""The repository's own layout: `pytest -m LAYER` at the root runs that layer of the example agent."""

from __future__ import annotations

import subprocess
import sys

from ..conftest import REPO

COLLECT = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "--agentevals-history=off"]


def test_dash_m_at_the_root_collects_each_layer_of_the_example() -> None:
    # One collection for the layers: it walks the whole suite, which takes a while.
    done = subprocess.run(
        [*COLLECT, "-m", "step or replay or resume"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    collected = done.stdout.splitlines()
    # The step layer: the example's golden step cases.
    assert "goldens/taskrunner.yaml::step-16-tool-choice" in collected
    assert any(line.startswith("goldens/taskrunner-stall.yaml::") for line in collected)
    # The replay layer: the example's recorded runs, replayed by their tests.
    assert "tests/replay/test_example.py::test_a_recorded_run_replays_offline" in collected
    # The resume layer: the example's checkpoint fixtures, booted by their tests.
    assert "fixtures/test_resume_examples.py::test_next_leg_after_compaction" in collected
