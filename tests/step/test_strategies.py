"""The metamorphic strategies keep a case well formed and its right answer right."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentevals.step import Decision, StepCase
from pytest_agentevals.step.kinds import parse_expectation
from pytest_agentevals.step.strategies import (
    Perturbed,
    padded_history,
    perturbations,
    read_only,
    rename,
    renamed_paths,
    reordered_tool_results,
    used_paths,
)


def use(tool_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": tool, "input": arguments}


def result(tool_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": text}


MESSAGES = [
    {"role": "user", "content": "Fix the failing test in src/parse.py; see tests/test_parse.py."},
    {"role": "assistant", "content": [use("a", "read_file", path="src/parse.py")]},
    {"role": "user", "content": [result("a", "def parse(s): ...")]},
    {"role": "assistant", "content": [use("b", "read_file", path="tests/test_parse.py")]},
    {"role": "user", "content": [result("b", "def test_parse(): assert parse('') == []")]},
    {
        "role": "assistant",
        "content": [use("c", "run_check", name="unit"), use("d", "run_check", name="lint")],
    },
    {"role": "user", "content": [result("c", "1 failed: test_parse"), result("d", "ok")]},
]

CASE = StepCase(
    id="step-4-tool-choice",
    kind="tool_choice",
    context={"request": {"model": "m", "messages": MESSAGES}},
    expect=parse_expectation(
        "tool_choice", {"tool": "write_file", "args": {"path": "src/parse.py"}}, "expect"
    ),
    path=Path("goldens/x.yaml"),
)


def toy_agent(case: StepCase) -> Decision:
    """Fixes the file the first user message names first, whatever else the history holds."""
    first = case.messages[0]["content"]
    target = next(word for word in first.replace(";", " ").split() if word.endswith(".py"))
    return Decision.tool("write_file", path=target)


def pairs_intact(messages: list[dict[str, Any]]) -> bool:
    for before, after in itertools.pairwise(messages):
        results = [
            b["tool_use_id"]
            for b in after["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        uses = [b["id"] for b in before["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
        if results and sorted(results) != sorted(uses):
            return False
    return True


def test_used_paths_are_the_tools_path_arguments() -> None:
    assert used_paths(CASE) == ["src/parse.py", "tests/test_parse.py"]


def test_rename_replaces_whole_paths_only() -> None:
    text = "see src/parse.py, not src/parse.pyc or xsrc/parse.py"
    assert (
        rename(text, {"src/parse.py": "src/abc.py"}) == "see src/abc.py, not src/parse.pyc or xsrc/parse.py"
    )


@settings(max_examples=30, deadline=None)
@given(reordered_tool_results(CASE, independent=read_only("read_file")))
def test_reordering_keeps_every_block_and_every_pair(perturbed: Perturbed) -> None:
    messages = perturbed.case.messages
    assert len(messages) == len(MESSAGES)
    assert messages[0] == MESSAGES[0]
    assert messages[-2] == MESSAGES[-2]  # the exchange the decision answers stays last
    assert sorted(map(str, messages[-1]["content"])) == sorted(map(str, MESSAGES[-1]["content"]))
    assert pairs_intact(messages)
    assert toy_agent(perturbed.case) == toy_agent(CASE)


def test_reordering_finds_both_perturbations() -> None:
    seen: set[str] = set()

    @settings(max_examples=40, deadline=None, database=None)
    @given(reordered_tool_results(CASE, independent=read_only("read_file")))
    def collect(perturbed: Perturbed) -> None:
        seen.update(part.split(" ")[-1] for part in perturbed.what.split("; "))

    collect()
    assert {"reordered", "messages[3:5]"} <= seen


@settings(max_examples=30, deadline=None)
@given(renamed_paths(CASE))
def test_renaming_is_consistent_and_renames_the_answer(perturbed: Perturbed) -> None:
    text = str(perturbed.case.context)
    assert "src/parse.py" not in text
    assert "tests/test_parse.py" not in text
    new = perturbed.case.expect.raw["args"]["path"]
    assert new.startswith("src/")
    assert new.endswith(".py")
    assert text.count(new) == str(CASE.context).count("src/parse.py")
    assert perturbed.case.check(toy_agent(perturbed.case)).ok


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=1, max_value=3000).flatmap(lambda tokens: padded_history(CASE, tokens)))
def test_padding_adds_tokens_early_and_keeps_roles_alternating(perturbed: Perturbed) -> None:
    messages = perturbed.case.messages
    assert messages[0] == MESSAGES[0]
    assert messages[-len(MESSAGES) + 1 :] == MESSAGES[1:]
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(messages))
    assert perturbed.case.check(toy_agent(perturbed.case)).ok


@settings(max_examples=30, deadline=None)
@given(perturbations(CASE, pad_tokens=500))
def test_a_metamorphic_step_case(perturbed: Perturbed) -> None:
    """What a user writes: the decision on any perturbed context still passes the expectation."""
    assert perturbed.case.check(toy_agent(perturbed.case)).ok, perturbed
