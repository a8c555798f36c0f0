"""The step layer through real pytest runs: collection, failures as a user reads them, re-blessing,
and the model call replayed, recorded or stale."""

from __future__ import annotations

from pathlib import Path

import pytest

# A harness decision for each kind, with no model call: enough to drive collection and reporting.
HARNESS_CONFTEST = """
import pytest
from pytest_agentevals.step import Decision

@pytest.fixture
def agentevals_decide():
    def decide(case):
        if case.kind == "escalation":
            spent = case.state["tokens_spent"] >= case.state["budget"]
            return Decision.escalate("budget_exhausted", action="stop") if spent else Decision.proceed()
        if case.kind == "compaction":
            return "Editing src/parser.py; 3/5 checks pass. Next: T004."
        words = case.messages[-1]["content"].split()
        return Decision.tool(words[0], path=words[-1])
    return decide
"""

GOLDENS = """\
scenario: refactor
cases:
  # the agent reads before it edits
  - id: step-12-tool-choice
    kind: tool_choice
    context:
      request: {messages: [{role: user, content: "read_file please src/a.py"}]}
    expect:
      tool: read_file
      args: {path: {$regex: '\\.py$'}}

  - id: step-13-tool-choice
    kind: tool_choice
    context:
      request: {messages: [{role: user, content: "read_file please src/b.txt"}]}
    expect:
      tool: write_file   # wrong on purpose
      args: {path: src/b.py}

  - id: step-40-escalation
    kind: escalation
    context: {state: {tokens_spent: 120, budget: 100}}
    expect: {escalate: true, kind: budget_exhausted}

  - id: step-41-compaction
    kind: compaction
    context: {state: {}}
    expect:
      keep: [src/parser.py, T004]
      max_tokens: 50
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # Hypothesis' plugin imports (and assertion-rewrites) all of Hypothesis in each in-process run.
    return pytester.runpytest("-p", "no:hypothesispytest", *args)


@pytest.fixture
def goldens(pytester: pytest.Pytester) -> Path:
    folder = pytester.mkdir("goldens")
    (folder / "conftest.py").write_text(HARNESS_CONFTEST)
    (folder / "refactor.yaml").write_text(GOLDENS)
    return folder


def test_cases_are_items_marked_step_with_readable_ids(pytester: pytest.Pytester, goldens: Path) -> None:
    result = run(pytester, "goldens", "-m", "step", "--collect-only", "-q")
    assert result.ret == 0
    ids = [line for line in result.outlines if "::" in line]
    assert ids == [
        "goldens/refactor.yaml::step-12-tool-choice",
        "goldens/refactor.yaml::step-13-tool-choice",
        "goldens/refactor.yaml::step-40-escalation",
        "goldens/refactor.yaml::step-41-compaction",
    ]
    assert run(pytester, "goldens", "-m", "not step", "--collect-only", "-q").ret == 5  # none left


def test_only_files_under_goldens_dir_are_cases(pytester: pytest.Pytester, goldens: Path) -> None:
    (pytester.path / "config.yaml").write_text("cases: not goldens\n")
    pytester.makepyprojecttoml('[tool.agentevals]\ngoldens_dir = "goldens"\n')
    result = run(pytester, "--collect-only", "-q")
    assert "4 tests collected" in result.stdout.str()


def test_a_failing_case_prints_expectation_and_decision_side_by_side(
    pytester: pytest.Pytester, goldens: Path
) -> None:
    result = run(pytester, "goldens", "-m", "step")
    result.assert_outcomes(passed=3, failed=1)
    # The short summary quotes an item's own failure text (a str longrepr) from pytest 9.0 on; before,
    # it names the case alone.
    summary = " - the decision does not*" if pytest.version_tuple >= (9,) else ""
    result.stdout.fnmatch_lines(
        [
            "*_ tool_choice step case step-13-tool-choice _*",
            "the decision does not match the golden (tool_choice; 2 of 2 fields differ)",
            "  field * expected * decision",
            '> tool * "write_file" * "read_file" * ✗',
            '> args.path * "src/b.py" * "src/b.txt" * ✗',
            f"FAILED goldens/refactor.yaml::step-13-tool-choice{summary}",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_xfail_marks_a_known_bad_case(pytester: pytest.Pytester, goldens: Path) -> None:
    (goldens / "refactor.yaml").write_text(
        GOLDENS.replace(
            "  - id: step-13-tool-choice\n", '  - id: step-13-tool-choice\n    xfail: "known: #12"\n'
        )
    )
    run(pytester, "goldens").assert_outcomes(passed=3, xfailed=1)


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        (
            "cases:\n  - id: a\n    kind: tool_choice\n    expect: {tool: [}\n",
            "refactor.yaml:4: is not valid YAML",
        ),
        (
            "cases:\n  - id: a\n    kind: tool_choice\n    expect: {tool: x, args: {p: {$regx: y}}}\n",
            "refactor.yaml:4::a expect.args.p: unknown matcher $regx (use one of: $any, $regex,*",
        ),
        (
            "cases:\n  - id: a\n    kind: tool_choise\n    expect: {tool: x}\n",
            "refactor.yaml:3::a kind: 'tool_choise' is not a kind of step case (use one of: tool_choice,*",
        ),
        (
            "cases:\n  - id: a\n    kind: escalation\n    expect: {escalate: maybe}\n",
            "refactor.yaml:4::a expect.escalate: 'maybe' is not true or false*",
        ),
        ("scenario: x\n", "*refactor.yaml: is not a goldens file: it has no top-level `cases:` list*"),
        (
            "cases:\n  - id: a\n    kind: compaction\n    expect: {keep: [x]}\n"
            "  - id: a\n    kind: compaction\n    expect: {keep: [y]}\n",
            "refactor.yaml:5::a id: case id 'a' is used twice (cases #1 and #2)*",
        ),
    ],
)
def test_a_malformed_goldens_file_is_one_clear_error(
    pytester: pytest.Pytester, goldens: Path, yaml_text: str, expected: str
) -> None:
    (goldens / "refactor.yaml").write_text(yaml_text)
    result = run(pytester, "goldens")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([f"*goldens/{expected}*"])
    assert "Traceback" not in result.stdout.str()


def test_several_bad_cases_are_listed_together(pytester: pytest.Pytester, goldens: Path) -> None:
    (goldens / "refactor.yaml").write_text(
        "cases:\n  - id: a\n    kind: tool_choice\n    expect: {}\n"
        "  - id: b\n    kind: nope\n    expect: {}\n"
    )
    result = run(pytester, "goldens")
    result.stdout.fnmatch_lines(
        ["*goldens/refactor.yaml: has 2 bad cases:", "*::a expect.tool: is required*", "*::b kind: 'nope'*"]
    )


def test_without_a_decide_fixture_the_error_says_what_to_write(
    pytester: pytest.Pytester, goldens: Path
) -> None:
    (goldens / "conftest.py").unlink()
    result = run(pytester, "goldens")
    result.assert_outcomes(errors=4)
    result.stdout.fnmatch_lines(
        ["*no agentevals_decide fixture for this step case. Define one in a conftest.py*"]
    )


def test_update_goldens_reblesses_only_the_failing_expectation(
    pytester: pytest.Pytester, goldens: Path
) -> None:
    result = run(pytester, "goldens", "--agentevals-update-goldens")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*agentevals step cases*",
            "re-blessed 1 step case(s) from their current decisions:",
            "--- goldens/refactor.yaml::step-13-tool-choice (was)",
            "+++ (now)",
            "-  tool: write_file",
            "+  tool: read_file",
            "-    path: src/b.py",
            "+    path: src/b.txt",
        ]
    )
    text = (goldens / "refactor.yaml").read_text()
    assert "# the agent reads before it edits" in text  # comments elsewhere survive
    assert "args: {path: {$regex: '\\.py$'}}" in text  # passing cases are left as written
    assert "      tool: read_file\n      args:\n        path: src/b.txt\n\n  - id: step-40" in text
    run(pytester, "goldens").assert_outcomes(passed=4)


def test_update_goldens_keeps_facts_that_survived(pytester: pytest.Pytester, goldens: Path) -> None:
    (goldens / "refactor.yaml").write_text(
        GOLDENS.replace("keep: [src/parser.py, T004]", "keep: [src/parser.py, T009]").replace(
            "max_tokens: 50", "max_tokens: 5"
        )
    )
    run(pytester, "goldens", "-k", "compaction", "--agentevals-update-goldens").assert_outcomes(passed=1)
    data = (goldens / "refactor.yaml").read_text()
    assert "      keep:\n      - src/parser.py\n      max_tokens: 13\n" in data


_BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        (
            _BOMB + "cases: []\n",
            "refactor.yaml: holds YAML aliases that expand 30 written nodes into 490,329,066 (refused*",
        ),
        (
            "cases:\n  - id: a\n    kind: tool_choice\n    expect: {tool: !!int abc}\n",
            "refactor.yaml:4: cases[0].expect.tool: 'abc' is not an integer*",
        ),
        (
            "cases:\n  - id: a\n    kind: tool_choice\n    expect: {tool: x, args: {d: 2026-02-30}}\n",
            "refactor.yaml:4: cases[0].expect.args.d: '2026-02-30' is not a date*",
        ),
    ],
)
def test_a_hostile_goldens_file_is_refused_before_it_is_built(
    pytester: pytest.Pytester, goldens: Path, yaml_text: str, expected: str
) -> None:
    (goldens / "refactor.yaml").write_text(yaml_text)
    result = run(pytester, "goldens")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert f"goldens/{expected.strip('*')}" in result.stdout.str()  # `[0]` is no fnmatch class here
    assert "Traceback" not in result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("linked", ["file", "folder"])
def test_a_linked_goldens_file_is_never_read_through_the_link(
    pytester: pytest.Pytester, goldens: Path, linked: str
) -> None:
    # A link in a pull request can point at any file on the machine: the goldens file it stands for
    # (here a good one, whose cases would pass) is never read, and the error names the link.
    elsewhere = pytester.mkdir("elsewhere")
    (elsewhere / "outside.yaml").write_text(GOLDENS.replace("step-", "outside-"))
    if linked == "file":
        (goldens / "outside.yaml").symlink_to(elsewhere / "outside.yaml")
        link = "goldens/outside.yaml"
    else:
        (goldens / "shared").symlink_to(elsewhere, target_is_directory=True)
        link = "goldens/shared"
    result = run(pytester, "goldens", "-m", "step", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([f"*: is a symbolic link, or inside one (*{link} -> *elsewhere*"])
    assert "outside-" not in result.stdout.str()  # nothing of the linked file was collected
    assert "Traceback" not in result.stdout.str()
