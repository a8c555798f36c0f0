"""The example agent's golden step cases: the fast gate passes offline, every kind of decision is
covered, and a prompt change is caught at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_agentevals.step import load_goldens

from ..session_support import Session, run_sessions

REPO = Path(__file__).resolve().parents[2]
GOLDENS = REPO / "goldens"


def pytest_in_repo(
    *args: str, env: dict[str, str] | None = None, where: tuple[str, ...] = ("goldens",)
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *where,
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
    assert "18 passed, 1 deselected" in done.stdout  # the taskrunner's 14, the framework examples' 4


def test_a_changed_system_prompt_makes_the_model_cases_stale(tmp_path: Path) -> None:
    (tmp_path / "longer_prompt.py").write_text(
        "import examples.taskrunner.prompts as prompts\nprompts.SYSTEM += ' Be brief.'\n"
    )
    done = pytest_in_repo("-m", "step", "-p", "longer_prompt", env={"PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1
    # The taskrunner's 8 model decisions; its harness's 6 and the framework examples' 4 still pass.
    assert "8 failed, 10 passed" in done.stdout
    assert "    - system prompt: sha256 " in done.stdout


def test_a_changed_prompt_makes_the_framework_examples_cases_stale(tmp_path: Path) -> None:
    # The LangGraph and the pydantic-ai cases decide through the framework with today's prompt.
    (tmp_path / "longer_notes_prompt.py").write_text(
        "import examples.notes_policy as policy\npolicy.SYSTEM += ' Be brief.'\n"
    )
    done = pytest_in_repo("-m", "step", "-p", "longer_notes_prompt", "-rf", env={"PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1
    assert "4 failed, 14 passed" in done.stdout
    failed = sorted(line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED "))
    assert [name.split("/")[-1].split("::")[0] for name in failed] == ["notes-graph.yaml"] * 2 + [
        "notes-pydantic.yaml"
    ] * 2


def test_the_metamorphic_cases_pass_against_the_simulated_model() -> None:
    done = pytest_in_repo("-m", "agentevals_metamorphic")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 passed, 18 deselected" in done.stdout


# Each rule of the harness, changed the way a careless edit would change it, and the golden cases
# that must catch it: the cases decide through the harness's own seams, so none copies a rule.
MUTATIONS = {
    "budget x10": (
        "token_budget=config.token_budget * 10 if config.token_budget else None",
        ["taskrunner-budget.yaml::step-15-escalation", "taskrunner-budget.yaml::step-15-escalation-2"],
    ),
    "repeat limit": ("repeat_limit=config.repeat_limit + 1", ["taskrunner-stall.yaml::step-12-escalation"]),
    "compaction mark": (
        "compact_at=config.compact_at * 2",
        ["taskrunner.yaml::step-15-compaction", "taskrunner.yaml::step-31-compaction"],
    ),
    "restart limit": (
        "max_restarts=config.max_restarts + 1",
        ["taskrunner-stall.yaml::step-36-escalation-2"],
    ),
}


# The mutated sessions, one after another in one fresh process: a process each spent most of its
# seconds importing pytest, the plugins, the SDK and the example again. Each session imports the
# example afresh (its modules and the mutating plugin are dropped before it), so a changed rule never
# reaches the next session.
@pytest.fixture(scope="module")
def mutated_sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    """Each mutation -> the exit code and output of `pytest -m step -p mutate_harness -rf` over the
    taskrunner's cases with the harness so changed."""
    # The taskrunner's cases only: the framework examples' cases decide through LangGraph and
    # pydantic-ai, not this harness, and importing both costs each of these runs seconds.
    taskrunner = sorted(str(path.relative_to(REPO)) for path in GOLDENS.glob("taskrunner*.yaml"))
    sessions = []
    for n, (change, _) in enumerate(MUTATIONS.values()):
        where = tmp_path_factory.mktemp(f"mutation-{n}")
        (where / "mutate_harness.py").write_text(
            "import dataclasses\n"
            "from examples.taskrunner import scenarios\n"
            "original = scenarios.harness_config\n"
            "def harness_config(name):\n"
            "    config = original(name)\n"
            f"    return dataclasses.replace(config, {change})\n"
            "scenarios.harness_config = harness_config\n"
        )
        args = [*taskrunner, "-q", "-p", "no:cacheprovider", "--agentevals-history=off"]
        sessions.append(
            Session(
                [*args, "-m", "step", "-p", "mutate_harness", "-rf"],
                str(where / "out.log"),
                path=str(where),
                fresh=("conftest", "mutate_harness", "examples"),
            )
        )
    return dict(zip(MUTATIONS, run_sessions(sessions, REPO), strict=True))


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_a_changed_harness_rule_turns_a_golden_case_red(
    mutated_sessions: dict[str, tuple[int, str]], mutation: str
) -> None:
    _, must_fail = MUTATIONS[mutation]
    code, output = mutated_sessions[mutation]
    assert code == 1, output[-3000:]
    failed = sorted(line.split()[1] for line in output.splitlines() if line.startswith("FAILED "))
    assert all(any(name.endswith(case) for name in failed) for case in must_fail), failed
