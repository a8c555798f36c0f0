"""The example's marathon: `pytest -m marathon` at the repository root runs its five seeds offline, shows
the verdict table with n and intervals, and the incidents are in `agentevals show` of the seeds' traces."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from pytest_agentevals.marathon.results import read_results

from ..conftest import REPO, run_agentevals


def test_pytest_dash_m_marathon_at_the_root_runs_the_example(tmp_path: Path) -> None:
    folder = tmp_path / "marathons"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            # The taskrunner's marathon, the one checked here: the framework examples' marathons
            # run in the main job and in this suite's own session at the root.
            "marathons/test_taskrunner_marathon.py",
            "-m",
            "marathon",
            "-p",
            "no:cacheprovider",
            "--agentevals-history=off",
            "--agentevals-sha=example",
            f"--agentevals-marathons-dir={folder}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert re.search(r"(?<![0-9])5 passed", out), out
    assert "test_taskrunner_marathon: n=5 seeds (0-4) at example" in out
    assert "verified-pass rate      0.80      0.38 to 0.96" in out  # n and its Wilson interval
    assert "statuses: ok 4, stalled 1; restarts: 1 (seed 1: 1)" in out
    stored = {r.seed: r for r in read_results(folder / "results.jsonl")}
    assert sorted(stored) == [0, 1, 2, 3, 4]
    assert sum(r.metrics.rate_limited for r in stored.values()) >= 5  # 429s, retried: weather

    # The crash the supervisor recovered, and the stall the watchdog stopped, in the seeds' traces.
    crashed = run_agentevals("show", folder / (stored[1].trace or ""), cwd=tmp_path)
    assert "ended      ok" in crashed.stdout
    assert "restarts 1" in crashed.stdout
    stalled = run_agentevals("show", folder / (stored[3].trace or ""), cwd=tmp_path)
    assert "ended      stalled" in stalled.stdout
    assert "watchdog 2 · guards stop 1" in stalled.stdout
