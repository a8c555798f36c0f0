"""A failure of ours reads as a user needs it: our message first, the user's own frames briefly, and
none of the dozens of anthropic, httpx, vcrpy and pytest-agentevals frames in between. Tested on the
output as a user reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentevals.errors import AgentEvalsError
from pytest_agentevals.report.failure import OurFailure
from pytest_agentevals.trace.scrub import REDACTED

from .. import replay_support as agent
from ..conftest import make_fake_key

DIVERGING = """
import pytest
import replay_support as agent


def ask(task):
    return agent.run_agent(agent.client(), task)


@pytest.mark.replay("fix")
def test_changed_prompt():
    ask("Fix the bug in b.txt")


def test_plain_failure():
    assert 1 + 1 == 3
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(replay_support=Path(agent.__file__).read_text())
    agent.record(pytester.path / "cassettes" / "fix.trace.jsonl")
    pytester.makeini("[pytest]\naddopts = --agentevals-collect-cassettes=false\n")
    pytester.makepyfile(test_fix=DIVERGING)
    return pytester


def failure_of(lines: list[str], test: str) -> list[str]:
    """The lines of one test's failure in the FAILURES section (up to the next header)."""
    start = next(i for i, line in enumerate(lines) if line.startswith("_") and f" {test} " in line)
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith(("___", "===", "---"))), len(lines)
    )
    return lines[start + 1 : end]


def test_a_divergence_shows_our_message_first_and_the_users_frames_only(project: pytest.Pytester) -> None:
    result = project.runpytest()
    result.assert_outcomes(failed=2)
    lines = failure_of(result.stdout.lines, "test_changed_prompt")
    assert lines[0].startswith(
        "E   ReplayDivergence: replay diverged at model call 1 of the run: the request differs from "
        "recorded model call 1 (step 1, line 2) of "
    )
    assert lines[1:4] == [
        "E     messages[0].content:",
        "E       recorded: 'Fix the bug in a.txt'",
        "E       now:      'Fix the bug in b.txt'",
    ]
    frames = lines[lines.index("") + 1 :]
    assert frames[:6] == [
        "test_fix.py:11: in test_changed_prompt",
        '    ask("Fix the bug in b.txt")',
        "test_fix.py:6: in ask",
        "    return agent.run_agent(agent.client(), task)",
        "replay_support.py:97: in run_agent",
        "    message = model_client.messages.create(**kwargs)",
    ]
    assert frames[6].endswith(
        "frames of pytest-agentevals, the anthropic SDK, httpx, vcrpy, pytest and the standard library "
        "hidden; --fulltrace shows them)"
    )
    assert len(lines) < 25  # it was ~90 lines of SDK frames before our message
    assert not [line for line in lines if "site-packages" in line or "pytest_agentevals/" in line]
    # The short summary names our error too.
    result.stdout.fnmatch_lines(
        ["FAILED test_fix.py::test_changed_prompt - ReplayDivergence: replay diverged*"]
    )


def test_the_replay_report_section_agrees_with_the_verdict(project: pytest.Pytester) -> None:
    result = project.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*- Captured agentevals replay call -*",
            "replayed */cassettes/fix.trace.jsonl (strict): served 0 of 4 recorded HTTP exchanges, 0 of 3 "
            "tool calls; failed: ReplayDivergence: replay diverged at model call 1 of the run*",
        ]
    )
    assert "no divergence" not in result.stdout.str()


def test_other_failures_keep_their_traceback(project: pytest.Pytester) -> None:
    result = project.runpytest()
    lines = failure_of(result.stdout.lines, "test_plain_failure")
    assert "    def test_plain_failure():" in lines
    assert ">       assert 1 + 1 == 3" in lines


def test_fulltrace_shows_every_frame(project: pytest.Pytester) -> None:
    result = project.runpytest("--fulltrace")
    lines = failure_of(result.stdout.lines, "test_changed_prompt")
    assert any("anthropic" in line and ".py:" in line for line in lines)
    assert any(line.startswith("E   ") and "ReplayDivergence" in line for line in lines)


def test_a_guard_stop_reads_the_same_way(pytester: pytest.Pytester) -> None:
    # One mechanism for every layer's errors: a budget stop raised deep in the SDK call as well.
    pytester.makepyprojecttoml("[tool.agentevals.budget]\nmax_calls = 1\n")
    pytester.makepyfile(
        test_budget="""
        import anthropic
        from pytest_agentevals.sim import Reply, SimServer

        def test_spends(agentevals_recorder):
            with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
                client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
                for turn in range(2):
                    client.messages.create(
                        model="claude-sonnet-4-6", max_tokens=8, messages=[{"role": "user", "content": "q"}]
                    )
        """
    )
    result = pytester.runpytest("--agentevals-history=off", "--agentevals-traces-dir=traces")
    result.assert_outcomes(failed=1)
    lines = failure_of(result.stdout.lines, "test_spends")
    assert lines[0].startswith("E   RunStopped: the budget guard stopped the run as budget_exhausted")
    assert "test_budget.py:8: in test_spends" in lines
    assert not [line for line in lines if "site-packages" in line or "pytest_agentevals/" in line]


def test_a_secret_our_message_quotes_is_redacted_before_it_is_shown_or_kept(tmp_path: Path) -> None:
    # The message reaches the terminal and, through pytest's --junitxml, a file a CI run keeps.
    key = make_fake_key("failure")
    try:
        try:
            raise AgentEvalsError(f"the request changed: url ...?key={key}")
        except AgentEvalsError as error:
            raise RuntimeError(f"wrapped: {error}") from error
    except RuntimeError as raised:
        failure = OurFailure.replacing(object(), raised, tmp_path)
    assert failure is not None
    shown = str(failure)
    assert key[:20] not in shown
    assert key[:20] not in failure.reprcrash.message
    assert f"?key={REDACTED}" in shown


def test_our_error_behind_a_wrapper_raised_while_handling_it_is_found_and_a_suppressed_one_is_not() -> None:
    # litellm wraps a client's error by raising its own inside `except` (a context, not a cause).
    from pytest_agentevals.report.failure import ours

    def wrapped(suppress: bool) -> BaseException:
        try:
            try:
                raise AgentEvalsError("replay diverged at model call 1")
            except AgentEvalsError as error:
                if suppress:
                    raise RuntimeError("APIConnectionError: unrelated") from None
                raise RuntimeError(f"APIConnectionError: {error}")  # noqa: B904 (litellm's way)
        except RuntimeError as raised:
            return raised

    found = ours(wrapped(False))
    assert isinstance(found, AgentEvalsError)
    assert str(found) == "replay diverged at model call 1"
    assert ours(wrapped(True)) is None
