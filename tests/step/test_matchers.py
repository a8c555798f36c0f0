"""Matchers and expectations, one by one, passing and failing, with the table a user reads."""

from __future__ import annotations

import pytest

from pytest_agentevals.errors import GoldenError
from pytest_agentevals.step import Decision, Escalation, JudgeSpec, JudgeVerdict, ToolCall
from pytest_agentevals.step.kinds import parse_expectation
from pytest_agentevals.step.matchers import compare, compile_expected, rebless_data
from pytest_agentevals.step.render import explain, table


def rows_of(expected: object, actual: object, subset: bool = False) -> list[tuple[str, bool]]:
    return [
        (row.field, row.ok) for row in compare(compile_expected(expected, "expect"), actual, subset=subset)
    ]


# -- field matchers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "good", "bad"),
    [
        ("$any", "anything", None),
        ({"$any": True}, 3, None),
        ({"$regex": r"^src/.*\.py$"}, "src/a.py", "src/a.txt"),
        ({"$approx": 30, "rel": 0.1}, 32.5, 34),
        ({"$approx": 1.0, "abs": 0.25}, 1.2, 1.3),
        ({"$one_of": ["fast", {"$regex": "^safe"}]}, "safe-mode", "slow"),
        ({"$call": "tests.golden_checks:is_even"}, 4, 5),
        ({"path": "a.py", "n": 2}, {"path": "a.py", "n": 2}, {"path": "a.py", "n": 3}),
        ([1, {"$any": True}], [1, "x"], [1]),
    ],
)
def test_each_matcher_passes_and_fails(expected: object, good: object, bad: object) -> None:
    assert all(ok for _, ok in rows_of(expected, good))
    if bad is not None:
        assert not all(ok for _, ok in rows_of(expected, bad))


def test_any_still_needs_the_field() -> None:
    assert rows_of({"path": "$any"}, {}) == [("path", False)]


def test_exact_reports_unexpected_fields_and_subset_ignores_them() -> None:
    actual = {"path": "a.py", "mode": "w"}
    assert rows_of({"path": "a.py"}, actual) == [("path", True), ("mode", False)]
    assert rows_of({"path": "a.py"}, actual, subset=True) == [("path", True)]


def test_booleans_are_not_numbers() -> None:
    assert rows_of({"flag": 1}, {"flag": True}) == [("flag", False)]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"$regx": "a"}, "unknown matcher $regx"),
        ({"$regex": "a", "$bogus": 1}, "unknown matcher $bogus (use one of"),  # $regex is no stranger
        ({"$regex": "a", "$any": 1}, "$regex and $any in one value (a value is one matcher"),
        ({"$regex": "("}, "is not a valid pattern"),
        ({"$approx": "ten"}, "$approx value 'ten' is not a number"),
        ({"$one_of": []}, "is not a non-empty list"),
        ({"$call": "no_such_module_x:f"}, "cannot import 'no_such_module_x'"),
        ({"$call": "json"}, "is not an import path"),
        ({"$regex": "a", "flags": "i"}, "$regex takes no key 'flags'"),
    ],
)
def test_bad_matchers_name_the_key(raw: object, message: str) -> None:
    with pytest.raises(GoldenError, match=r"expect\.args\.path") as info:
        compile_expected({"path": raw}, "expect.args")
    assert message in str(info.value)


def test_rebless_keeps_what_still_matches() -> None:
    raw = {"path": {"$regex": r"\.py$"}, "content": "old", "mode": "w"}
    actual = {"path": "b.py", "content": "new"}
    assert rebless_data(raw, actual) == {"path": {"$regex": r"\.py$"}, "content": "new"}
    assert rebless_data(raw, {**actual, "extra": 1}, subset=True) == {
        "path": {"$regex": r"\.py$"},
        "content": "new",
    }


# -- expectations -------------------------------------------------------------------------------------


def check(kind: str, expect: dict[str, object], decision: Decision, judge: object = None) -> tuple[bool, str]:
    outcome = parse_expectation(kind, expect, "expect").check(decision, judge)  # type: ignore[arg-type]
    return outcome.ok, explain("goldens/x.yaml::case", kind, outcome)


def test_tool_choice_side_by_side() -> None:
    decision = Decision.tool("read_file", path="src/b.txt")
    ok, text = check("tool_choice", {"tool": "write_file", "args": {"path": "src/b.py"}}, decision)
    assert not ok
    lines = text.splitlines()
    assert lines[0] == (
        "goldens/x.yaml::case: the decision does not match the golden (tool_choice; 2 of 2 fields differ)"
    )
    assert lines[1].split() == ["field", "expected", "decision"]
    tool = next(line for line in lines if "tool " in line and line.startswith(">"))
    assert tool.split() == [">", "tool", '"write_file"', '"read_file"', "✗"]
    # the columns line up: every value starts where its header does
    assert tool.index('"write_file"') == lines[1].index("expected")
    assert tool.index('"read_file"') == lines[1].index("decision")


def test_tool_choice_without_a_tool_call_says_what_happened() -> None:
    ok, text = check("tool_choice", {"tool": "read_file"}, Decision.escalate("watchdog"))
    assert not ok
    assert "escalated (watchdog)" in text
    assert "no tool call" in text


def test_tool_choice_check_function() -> None:
    expect = {"tool": "write_file", "check": "tests.golden_checks:content_is_final"}
    assert check("tool_choice", expect, Decision.tool("write_file", path="a", content="done"))[0]
    ok, text = check("tool_choice", expect, Decision.tool("write_file", path="a", content="TODO"))
    assert not ok
    assert "tests.golden_checks:content_is_final(args)" in text
    assert "the file still says TODO" in text


def test_tool_choice_of_a_model_message() -> None:
    message = {
        "type": "message",
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "tu_1", "name": "read_file", "input": {"path": "a.py"}},
        ],
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    assert check("tool_choice", {"tool": "read_file", "args": {"path": "a.py"}}, Decision.of(message))[0]


CALLS = (ToolCall("read_file", {"path": "a"}), ToolCall("write_file", {"path": "a"}))


@pytest.mark.parametrize(
    ("order", "expected", "passes"),
    [
        ("strict", ["read_file", "write_file"], True),
        ("strict", ["write_file", "read_file"], False),
        ("unordered", ["write_file", "read_file"], True),
        ("unordered", ["write_file"], False),
        ("subset", ["read_file", "write_file", "run_check"], True),
        ("subset", ["read_file"], False),
        ("superset", ["write_file"], True),
        ("superset", ["write_file", "run_check"], False),
    ],
)
def test_trajectory_orders(order: str, expected: list[str], passes: bool) -> None:
    expect = {"calls": [{"tool": name} for name in expected], "order": order}
    ok, text = check("trajectory", expect, Decision(tool_calls=CALLS))
    assert ok is passes, text


def test_trajectory_failure_names_missing_and_unexpected_calls() -> None:
    expect = {"calls": [{"tool": "write_file"}, {"tool": "run_check"}], "order": "unordered"}
    ok, text = check("trajectory", expect, Decision(tool_calls=CALLS))
    assert not ok
    assert "(not made)" in text
    assert "✗ missing" in text
    assert "✗ unexpected" in text


def test_compaction_facts_tokens_and_the_summary() -> None:
    summary = "Editing src/parser.py; 3/5 checks pass. Next: T004."
    expect = {
        "keep": ["src/parser.py", {"$regex": r"\d/5 checks"}, "T009"],
        "drop": ["Traceback"],
        "max_tokens": 5,
    }
    ok, text = check("compaction", expect, Decision.compaction(summary))
    assert not ok
    assert [line.split()[:2] for line in text.splitlines() if line.startswith(">")] == [
        [">", "keep[2]"],
        [">", "tokens"],
    ]
    assert "lost" in text
    assert "(≈ chars/4)" in text
    assert summary in text
    ok, text = check(
        "compaction", {"keep": ["src/parser.py"], "drop": ["T004"]}, Decision.compaction(summary)
    )
    assert not ok
    assert "present: 'T004'" in text


def test_compaction_judge_verdict_and_model_are_shown() -> None:
    asked: list[tuple[str, str]] = []

    def judge(spec: JudgeSpec, summary: str) -> JudgeVerdict:
        asked.append((spec.rubric, summary))
        return JudgeVerdict(False, "it does not say which check failed", "judge-model-1")

    expect = {"keep": ["T004"], "judge": {"rubric": "names the failing check"}}
    ok, text = check("compaction", expect, Decision.compaction("Next: T004."), judge)
    assert not ok
    assert asked == [("names the failing check", "Next: T004.")]
    judge_row = next(line for line in text.splitlines() if line.startswith("> judge"))
    assert "fail (judge judge-model-1): it does not say" in judge_row
    assert judge_row.endswith("✗ judge")
    assert "judge: judge-model-1 failed it; every other check passed" in text


def test_the_judge_is_not_asked_without_a_judge() -> None:
    expect = {"keep": ["T004"], "judge": {"rubric": "names the failing check"}}
    assert check("compaction", expect, Decision.compaction("Next: T004."))[0]


@pytest.mark.parametrize(
    ("expect", "decision", "passes"),
    [
        ({"escalate": True}, Decision.escalate("budget_exhausted", action="stop"), True),
        ({"escalate": True, "kind": "watchdog"}, Decision.escalate("budget_exhausted"), False),
        ({"escalate": True, "action": "yield"}, Decision(escalation=Escalation("yield", "watchdog")), True),
        ({"escalate": True}, Decision.tool("read_file", path="a"), False),
        ({"escalate": False}, Decision.tool("read_file", path="a"), True),
        ({"escalate": False}, Decision.escalate("unsafe"), False),
        ({"escalate": False, "kind": "watchdog"}, Decision.escalate("budget_exhausted"), True),
        ({"escalate": False, "kind": "watchdog"}, Decision.escalate("watchdog"), False),
        (
            {"escalate": True, "kind": {"$one_of": ["budget", "watchdog"]}},
            Decision.escalate("watchdog"),
            True,
        ),
    ],
)
def test_escalation(expect: dict[str, object], decision: Decision, passes: bool) -> None:
    ok, text = check("escalation", expect, decision)
    assert ok is passes, text


def test_an_end_turn_without_tools_is_a_stop() -> None:
    message = {"content": [{"type": "text", "text": "All done."}], "stop_reason": "end_turn"}
    decision = Decision.of(message)
    assert decision.escalation == Escalation("stop", "end_turn")
    assert check("escalation", {"escalate": True, "action": "stop"}, decision)[0]


def test_an_escalation_tool_is_an_escalation() -> None:
    message = {
        "content": [
            {
                "type": "tool_use",
                "id": "t",
                "name": "ask_human",
                "input": {"kind": "unsafe", "reason": "rm -rf"},
            }
        ],
        "stop_reason": "tool_use",
    }
    decision = Decision.of(message)
    assert decision.escalation == Escalation("escalate", "unsafe", "rm -rf")
    assert decision.tool_calls == ()


def test_a_decision_that_is_not_one_says_what_to_return() -> None:
    with pytest.raises(GoldenError, match="returned int, which is not a decision"):
        Decision.of(42)


def test_long_values_wrap_inside_their_column() -> None:
    text = table(compare(compile_expected({"content": "x" * 100}, "e"), {"content": "y" * 100}))
    assert all(len(line) < 140 for line in text.splitlines())
    assert sum("xxxx" in line for line in text.splitlines()) >= 2


# -- Decision.calls ---------------------------------------------------------------------------------


def test_decision_calls_takes_decision_tool_items_tool_calls_and_pairs_in_order() -> None:
    decision = Decision.calls(
        [
            Decision.tool("read_file", path="a.py"),
            ToolCall("run_tests", {"k": "add"}),
            ("write_file", {"path": "a.py", "content": "x"}),
            Decision.calls([Decision.tool("ls"), Decision.tool("pwd")]),
        ]
    )
    assert decision.tool_calls == (
        ToolCall("read_file", {"path": "a.py"}),
        ToolCall("run_tests", {"k": "add"}),
        ToolCall("write_file", {"path": "a.py", "content": "x"}),
        ToolCall("ls", {}),
        ToolCall("pwd", {}),
    )
    assert check("tool_choice", {"tool": "read_file", "args": {"path": "a.py"}}, decision)[0]


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ("read_file", "item 1 is str 'read_file'"),
        ({"tool": "read_file"}, "item 1 is dict {'tool': 'read_file'}"),
        (("read_file",), "item 1 is tuple ('read_file',)"),
        (Decision.escalate("watchdog"), "item 1 is a Decision that is not only tool calls"),
        (Decision.proceed("go on"), "item 1 is a Decision that is not only tool calls"),
    ],
)
def test_decision_calls_names_an_item_it_cannot_take_and_what_it_takes(item: object, said: str) -> None:
    with pytest.raises(GoldenError) as raised:
        Decision.calls([Decision.tool("ls"), item])  # type: ignore[list-item]
    message = str(raised.value)
    assert message.startswith(f"Decision.calls: {said}")
    assert "Decision.tool(name, **args), ToolCall(name, args) or (name, args)" in message
