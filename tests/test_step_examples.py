"""The example agent's golden step cases: the fast gate passes offline, every kind of decision is
covered, and a prompt change is caught at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pytest_agentevals.golden import load_goldens

REPO = Path(__file__).resolve().parent.parent
GOLDENS = REPO / "goldens"


def pytest_in_repo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "goldens",
            "-q",
            "-p",
            "no:cacheprovider",
            "--agentevals-history=off",
            *args,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def test_every_kind_of_decision_has_cases() -> None:
    kinds = {case.kind for path in GOLDENS.glob("*.yaml") for case in load_goldens(path).cases}
    assert {"tool_choice", "compaction", "escalation"} <= kinds


def test_the_fast_gate_passes_offline() -> None:
    done = pytest_in_repo("-m", "step")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "14 passed, 1 deselected" in done.stdout


def test_a_changed_system_prompt_makes_the_model_cases_stale(tmp_path: Path) -> None:
    (tmp_path / "longer_prompt.py").write_text(
        "import examples.taskrunner.prompts as prompts\nprompts.SYSTEM += ' Be brief.'\n"
    )
    done = pytest_in_repo("-m", "step", "-p", "longer_prompt", env={"PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1
    assert "8 failed, 6 passed" in done.stdout  # the 8 model decisions; the harness's 6 still pass
    assert "    - system prompt: sha256 " in done.stdout


def test_the_metamorphic_cases_pass_against_the_simulated_model() -> None:
    done = pytest_in_repo("-m", "metamorphic")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 passed, 14 deselected" in done.stdout
