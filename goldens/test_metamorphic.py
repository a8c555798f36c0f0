"""Metamorphic step cases for the example agent: perturb a golden context in ways that must not change
the right answer, and check the decision still passes. Off the fast gate (`-m step` skips them):
each perturbed request is new, so it goes to the model live (here the simulated one).

    pytest goldens -m agentevals_metamorphic
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from pytest_agentevals.step import StepCase, explain, load_case
from pytest_agentevals.step.strategies import Perturbed, perturbations

# Right after a compaction, the agent must go on with the next task (T006, in t006.txt).
AFTER_COMPACTION = load_case(Path(__file__).parent / "taskrunner.yaml", "step-16-tool-choice")


@pytest.mark.agentevals_metamorphic
@settings(max_examples=12, derandomize=True, database=None, deadline=None)
@given(perturbed=perturbations(AFTER_COMPACTION, pad_tokens=1500))
def test_the_next_task_survives_perturbation(
    perturbed: Perturbed, agentevals_decide: Callable[[StepCase], Any]
) -> None:
    outcome = perturbed.case.check(agentevals_decide(perturbed.case))
    assert outcome.ok, explain(f"{perturbed.case.label} ({perturbed.what})", perturbed.case.kind, outcome)
