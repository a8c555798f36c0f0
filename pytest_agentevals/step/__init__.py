"""The step layer: single agent decisions checked against golden step cases.

A goldens file (`goldens/*.yaml`) holds step cases: the frozen context at one decision point and
what the decision there should be. pytest collects each case as an item marked `step`; the
`agentevals_decide` fixture (yours, in a conftest.py) gets the agent's decision for a case, with the
model call replayed from `goldens/*.decisions.trace.jsonl` when the request is unchanged.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .case import StepCase
    from .decision import ESCALATION_TOOLS, Decision, Escalation, ToolCall
    from .expectation import Expectation, Outcome
    from .judge import Judge, JudgeSpec, JudgeVerdict, anthropic_judge
    from .loader import GoldensFile, load_case, load_goldens
    from .matchers import AnyValue, Approx, Call, Matcher, OneOf, Regex
    from .render import StepMismatch, explain
    from .runner import CaseRun, Decide, run_case

__all__ = [
    "ESCALATION_TOOLS",
    "AnyValue",
    "Approx",
    "Call",
    "CaseRun",
    "Decide",
    "Decision",
    "Escalation",
    "Expectation",
    "GoldensFile",
    "Judge",
    "JudgeSpec",
    "JudgeVerdict",
    "Matcher",
    "OneOf",
    "Outcome",
    "Regex",
    "StepCase",
    "StepMismatch",
    "ToolCall",
    "anthropic_judge",
    "explain",
    "load_case",
    "load_goldens",
    "run_case",
]

__getattr__, __dir__ = attach(__name__, __file__)
