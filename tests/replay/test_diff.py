"""What a changed request looks like: a system prompt as a text diff (as a message is), a difference
of only a trailing newline or of line endings said in words (never a header with nothing under it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.errors import ReplayDivergence, StaleCassette
from pytest_agentevals.replay import Replayer, what_changed
from pytest_agentevals.replay.diff import Difference, render_difference, text_diff
from pytest_agentevals.replay.staleness import check_request, stale

from .. import replay_support as agent

pytest_plugins = ["pytester"]

PROMPT = "You are careful.\nUse the tools.\nBe brief."


def _request(**body: Any) -> dict[str, Any]:
    return {"method": "POST", "path": "/v1/messages", "body": {"model": "m", "messages": [], **body}}


def test_a_changed_multi_line_system_prompt_is_a_diff_under_its_hashes() -> None:
    lines = check_request(
        {"system": PROMPT}, {"system": PROMPT.replace("the tools", "the tools wisely")}
    ).differences
    assert lines[0].startswith("system prompt: sha256 ")
    assert lines[1:] == [
        "    --- recorded",
        "    +++ now",
        "    @@ -1,3 +1,3 @@",
        "     You are careful.",
        "    -Use the tools.",
        "    +Use the tools wisely.",
        "     Be brief.",
    ]


def test_a_system_prompt_of_blocks_is_diffed_by_its_text_and_a_change_elsewhere_is_said() -> None:
    blocks = [{"type": "text", "text": "You are careful."}, {"type": "text", "text": "Be brief."}]
    changed = [blocks[0], {"type": "text", "text": "Be thorough."}]
    lines = check_request({"system": blocks}, {"system": changed}).differences
    assert "    -Be brief." in lines
    assert "    +Be thorough." in lines
    cached = [blocks[0], {**blocks[1], "cache_control": {"type": "ephemeral"}}]
    lines = check_request({"system": blocks}, {"system": cached}).differences
    assert lines[1] == "    the same text: the blocks differ in their other fields (cache_control, type, ...)"


@pytest.mark.parametrize(
    ("recorded", "now", "said"),
    [
        ("a\nb\n", "a\nb", "the same text but for its end: recorded ends with '\\n', now with no newline"),
        ("a\nb", "a\nb\n", "the same text but for its end: recorded ends with no newline, now with '\\n'"),
        ("a\nb\n", "a\nb\r\n", "the same text but for its end: recorded ends with '\\n', now with '\\r\\n'"),
    ],
)
def test_a_difference_of_only_the_trailing_newline_says_so(recorded: str, now: str, said: str) -> None:
    assert text_diff(recorded, now) == [said]
    assert render_difference(Difference("messages[0].content", recorded, now)) == [
        "  messages[0].content:",
        f"    {said}",
    ]
    assert check_request({"system": recorded}, {"system": now}).differences[1:] == [f"    {said}"]


def test_line_endings_that_differ_inside_the_text_are_said_and_shown() -> None:
    (line,) = text_diff("a\nb\n", "a\r\nb\n")
    assert line == "the same lines but for their line endings: recorded 'a\\nb\\n', now 'a\\r\\nb\\n'"


def test_no_difference_is_nothing_and_a_real_one_is_never_an_empty_header() -> None:
    assert text_diff("same\n", "same\n") == []
    for recorded, now in [("x\n", "y\n"), ("x\n", "x"), ("x", "x\n\n"), ("a\nb", "a\n\nb")]:
        assert len(render_difference(Difference("system", recorded, now))) > 1, (recorded, now)


def test_what_changed_shows_the_system_diff_once() -> None:
    lines = what_changed(_request(system=PROMPT), _request(system=PROMPT + " Now."))
    assert sum(line == "    -Be brief." for line in lines) == 1
    assert "first difference in field system (its diff is above)" in lines
    both = what_changed(
        _request(system=PROMPT, messages=[{"role": "user", "content": "a"}]),
        _request(system=PROMPT + " Now.", messages=[{"role": "user", "content": "b"}]),
    )
    assert "  messages[0].content:" in both  # the differences after the system prompt still shown


def test_a_stale_cassette_indents_the_diff_under_its_line() -> None:
    lines = check_request({"system": PROMPT}, {"system": PROMPT + "\nAsk first."}).differences
    message = str(stale(Path("run.trace.jsonl"), lines, None))
    assert "\n  - system prompt: sha256 " in message
    assert "\n      +Ask first.\n" in message
    assert "  - " + "    " not in message


def test_a_replay_whose_system_prompt_changed_is_stale_with_the_diff(tmp_path: Path) -> None:
    trace = agent.record(tmp_path / "fix.trace.jsonl")
    with pytest.raises(StaleCassette) as caught, Replayer(trace):
        agent.run_agent(agent.client(), "Fix the bug in a.txt", system=agent.SYSTEM + "\nBe brief.")
    message = str(caught.value)
    assert "system prompt: sha256 " in message
    assert "+Be brief." in message


WRAPPING_FRAMEWORK = '''
class FrameworkError(Exception):
    """What a framework such as litellm raises for any error of the client it drives."""


def completion(call, depth=60):
    # Many frames of the framework's own between the agent and the client, as litellm has.
    if depth:
        return completion(call, depth - 1)
    try:
        return call()
    except Exception as error:
        raise FrameworkError(f"FrameworkException - {error}") from error
'''


def test_a_divergence_a_framework_wraps_is_raised_first_with_the_wrapper_named(tmp_path: Path) -> None:
    trace = agent.record(tmp_path / "fix.trace.jsonl")
    framework: dict[str, Any] = {}
    exec(WRAPPING_FRAMEWORK, framework)
    with pytest.raises(ReplayDivergence) as caught, Replayer(trace):
        framework["completion"](lambda: agent.run_agent(agent.client(), "Fix the bug in b.txt"))
    divergence = caught.value
    assert str(divergence).startswith("replay diverged at model call 1 of the run")
    assert divergence.__suppress_context__
    assert divergence.__cause__ is None
    (note,) = divergence.__notes__
    assert note.startswith("(the run then ended with FrameworkError: FrameworkException - replay diverged")


def test_in_pytest_the_wrapped_divergence_is_the_failure_and_the_framework_s_frames_are_not_shown(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(replay_support=Path(agent.__file__).read_text(), framework=WRAPPING_FRAMEWORK)
    agent.record(pytester.path / "cassettes" / "fix.trace.jsonl")
    pytester.makeini("[pytest]\naddopts = --agentevals-collect-cassettes=false\n")
    pytester.makepyfile(
        test_fix="""
        import pytest
        import framework
        import replay_support as agent

        @pytest.mark.replay("fix")
        def test_changed_prompt():
            framework.completion(lambda: agent.run_agent(agent.client(), "Fix the bug in b.txt"))
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    errors = [line for line in out.splitlines() if line.startswith("E ")]
    assert errors[0].startswith("E   ReplayDivergence: replay diverged at model call 1")
    # The framework's 61 frames are its first two, a count and its last.
    assert sum("framework.py:" in line for line in out.splitlines()) == 3
    assert "… 58 more frames of " in out
    assert "The above exception was the direct cause" not in out
    assert "(the run then ended with framework.FrameworkError: FrameworkException - replay diverged" in out
