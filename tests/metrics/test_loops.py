"""Loop detection: each rule on hand-made actions, against a brute-force reference, and actions
taken from real traces (recorded tools, and tools the harness did not record)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_agentevals as ae
from pytest_agentevals.metrics import Action, LoopDetector, LoopHit, action_of, actions_of
from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.trace.jsonable import canonical_json

MODEL = "claude-sonnet-4-6"
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]


def act(tool: str, result: str = "r", failed: bool = False, step: int = 0, args: str = "{}") -> Action:
    return Action(tool, args, result, failed, step, step)


def feed(detector: LoopDetector, actions: list[Action]) -> list[tuple[LoopHit | None, bool]]:
    return [(detector.observe(action), detector.in_loop) for action in actions]


def test_repeat_fires_once_at_the_nth_identical_action_and_again_after_a_break() -> None:
    a, b = act("read", step=1), act("write")
    seen = feed(LoopDetector(repeat=3), [a, a, a, a, b, a, a, a])
    hits = [(i, hit) for i, (hit, _) in enumerate(seen) if hit is not None]
    assert [(i, hit.rule, len(hit.actions)) for i, hit in hits] == [(2, "repeat", 3), (7, "repeat", 3)]
    assert [in_loop for _, in_loop in seen] == [False, False, True, True, False, False, False, True]
    assert hits[0][1].description == "read {} returned the same result 3 times in a row (steps 1-1)"


def test_repeat_needs_the_same_result() -> None:
    # The same call answering differently each time (a file growing, a clock) is not a loop.
    actions = [act("read", result=str(n)) for n in range(6)]
    assert all(hit is None for hit, _ in feed(LoopDetector(), actions))


def test_failing_repeat_counts_failures_within_the_window_not_only_in_a_row() -> None:
    broken = act("read", result="e1", failed=True)
    other_error = act("read", result="e2", failed=True)  # same call, another error: still counts
    ok1, ok2 = act("write", result="w1"), act("write", result="w2")
    seen = feed(LoopDetector(failing_repeat=3, window=5), [broken, ok1, other_error, ok2, broken])
    hit = seen[-1][0]
    assert hit is not None
    assert hit.rule == "failing_repeat"
    assert hit.actions == (broken, other_error, broken)
    assert "failed 3 times in 5 actions" in hit.description
    # Spread wider than the window: no loop.
    spread = [broken, ok1, ok2, ok1, broken, ok2, ok1, ok2, broken]
    assert all(hit is None for hit, _ in feed(LoopDetector(failing_repeat=3, window=5), spread))


def test_failing_repeat_is_reported_before_repeat_when_both_complete() -> None:
    broken = act("read", result="e", failed=True)
    seen = feed(LoopDetector(repeat=3, failing_repeat=3), [broken] * 5)
    assert [hit.rule if hit else None for hit, _ in seen] == [None, None, "failing_repeat", None, None]
    assert [in_loop for _, in_loop in seen] == [False, False, True, True, True]


def test_alternation_of_three_full_cycles() -> None:
    a, b, c = act("write"), act("check"), act("read")
    seen = feed(LoopDetector(alternation=3), [c, a, b, a, b, a, b, a, c])
    assert [hit.rule if hit else None for hit, _ in seen] == [None] * 6 + ["alternation", None, None]
    hit = seen[6][0]
    assert hit is not None
    assert hit.actions == (a, b, a, b, a, b)
    assert hit.description.startswith("write {} and check {} alternated 3 times")
    assert [in_loop for _, in_loop in seen] == [False] * 6 + [True, True, False]


def test_thresholds_are_checked_and_zero_turns_a_rule_off() -> None:
    with pytest.raises(ValueError, match="repeat must be 0"):
        LoopDetector(repeat=1)
    with pytest.raises(ValueError, match="window"):
        LoopDetector(window=1)
    a = act("read")
    assert all(hit is None for hit, _ in feed(LoopDetector(repeat=0, alternation=0), [a] * 10))


def test_reset_forgets_the_run_so_far() -> None:
    a = act("read")
    detector = LoopDetector(repeat=3)
    feed(detector, [a, a])
    detector.reset()
    assert detector.observe(a) is None
    assert not detector.in_loop


# -- against a brute-force reference --------------------------------------------------------------


def reference(
    actions: list[Action], repeat: int, failing: int, alternation: int, window: int
) -> list[tuple[str | None, tuple[Action, ...], bool]]:
    """For each action: the rule it completes (by priority), that hit's actions, and whether it is in
    a loop — each worked out from scratch by looking back."""
    keys = [a.key for a in actions]
    calls = [(a.tool, a.args) for a in actions]
    out: list[tuple[str | None, tuple[Action, ...], bool]] = []

    def failures(i: int) -> list[int]:
        return [j for j in range(max(0, i - window + 1), i + 1) if actions[j].failed and calls[j] == calls[i]]

    for i in range(len(actions)):
        run = 1
        while i - run >= 0 and keys[i - run] == keys[i]:
            run += 1
        alt = 1
        if i > 0 and keys[i] != keys[i - 1]:
            alt = 2
            while i - alt >= 0 and keys[i - alt] == keys[i - alt + 2]:
                alt += 1
        failing_loop = bool(failing) and actions[i].failed and len(failures(i)) >= failing
        before = [j for j in failures(i) if j < i]
        carried = bool(before) and len(failures(before[-1])) >= failing
        found: list[tuple[str, tuple[Action, ...]]] = []
        if failing_loop and not carried:
            found.append(("failing_repeat", tuple(actions[j] for j in failures(i))))
        if repeat and run == repeat:
            found.append(("repeat", tuple(actions[i - run + 1 : i + 1])))
        if alternation and alt == 2 * alternation:
            found.append(("alternation", tuple(actions[i - alt + 1 : i + 1])))
        in_loop = (
            failing_loop or (bool(repeat) and run >= repeat) or (bool(alternation) and alt >= 2 * alternation)
        )
        rule, hit_actions = found[0] if found else (None, ())
        out.append((rule, hit_actions, in_loop))
    return out


ALPHABET = [
    act("read", result="a"),
    act("read", result="b"),
    act("read", result="x", failed=True),
    act("read", result="y", failed=True),
    act("write", result="a"),
    act("check", result="x", failed=True),
]


@settings(max_examples=300, deadline=None)
@given(
    picks=st.lists(st.integers(0, len(ALPHABET) - 1), max_size=60),
    repeat=st.sampled_from([0, 2, 3, 4]),
    failing=st.sampled_from([0, 2, 3]),
    alternation=st.sampled_from([0, 2, 3]),
    window=st.integers(2, 8),
)
def test_the_detector_agrees_with_the_brute_force_reference(
    picks: list[int], repeat: int, failing: int, alternation: int, window: int
) -> None:
    actions = [Action(**{**ALPHABET[p].__dict__, "step": i, "seq": i}) for i, p in enumerate(picks)]
    detector = LoopDetector(repeat, failing, alternation, window=window)
    expected = reference(actions, repeat, failing, alternation, max(window, failing))
    for action, (rule, hit_actions, in_loop) in zip(actions, expected, strict=True):
        hit = detector.observe(action)
        assert (hit.rule if hit else None) == rule
        assert (hit.actions if hit else ()) == hit_actions
        assert detector.in_loop == in_loop


# -- actions from traces ----------------------------------------------------------------------------


def test_action_of_a_tool_call_event() -> None:
    ok = {
        "type": "tool_call",
        "seq": 4,
        "step": 2,
        "name": "read",
        "input": {"b": 1, "a": [1, 2]},
        "output": "x",
    }
    action = action_of(ok)
    assert (action.tool, action.args, action.failed, action.step, action.seq) == (
        "read",
        '{"a":[1,2],"b":1}',
        False,
        2,
        4,
    )
    # What the live recorder holds (a tuple) and what the trace gives back (a list) are one action.
    assert action_of({**ok, "input": {"a": (1, 2), "b": 1}}) == action
    failed = action_of({**ok, "error": {"type": "OSError", "message": "gone"}})
    assert failed.failed
    assert failed.result != action.result
    assert failed.args == action.args
    assert action_of({**ok, "output": "y"}).result != action.result


def unrecorded_tool_loop(client: anthropic.Anthropic, stream: bool) -> None:
    """A harness whose tools are plain functions: the trace has model calls only."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read it"}]
    while True:
        kwargs: dict[str, Any] = {"model": MODEL, "max_tokens": 256, "tools": TOOLS, "messages": messages}
        if stream:
            with client.messages.stream(**kwargs) as live:
                message = live.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        messages.append(
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
        )
        if message.stop_reason != "tool_use":
            return
        results = []
        for use in (b for b in message.content if b.type == "tool_use"):
            path = use.input["path"]  # type: ignore[index]
            missing = path == "missing.txt"
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": use.id,
                    "content": "no such file" if missing else f"contents of {path}",
                    **({"is_error": True} if missing else {}),
                }
            )
        messages.append({"role": "user", "content": results})


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_actions_derived_from_tool_use_and_tool_result_when_tools_are_not_recorded(
    tmp_path: Path, fake_api_key: str, stream: bool
) -> None:
    script = [
        Reply.tool_use("read_file", {"path": "a.txt"}, text="First a."),
        *[Reply.tool_use("read_file", {"path": "missing.txt"}, text=f"Try {n}.") for n in range(3)],
        Reply.tool_uses([("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"})]),
        Reply.text("done"),
    ]
    path = tmp_path / "run.trace.jsonl"
    with SimServer(script, seed=1) as sim, ae.Recorder(path):
        unrecorded_tool_loop(anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key), stream)
    for resolve in (True, False):
        events = ae.read_trace(path, resolve=resolve)
        assert not any(event["type"] == "tool_call" for event in events)
        actions = list(actions_of(events))
        assert [(a.tool, a.args, a.failed, a.step) for a in actions] == [
            ("read_file", '{"path":"a.txt"}', False, 1),
            ("read_file", '{"path":"missing.txt"}', True, 2),
            ("read_file", '{"path":"missing.txt"}', True, 3),
            ("read_file", '{"path":"missing.txt"}', True, 4),
            ("read_file", '{"path":"a.txt"}', False, 5),
            ("read_file", '{"path":"b.txt"}', False, 5),
        ]
        assert actions[0].result == actions[4].result != actions[5].result
        # The differing thought text ("Try 0.", "Try 1."...) does not make the calls differ.
        hits = [hit for hit in map(LoopDetector().observe, actions) if hit is not None]
        assert [hit.rule for hit in hits] == ["failing_repeat"]
        assert hits[0].actions == tuple(actions[1:4])


def test_recorded_tool_calls_are_the_actions_when_present(tmp_path: Path) -> None:
    @ae.tool
    def read_file(path: str) -> str:
        if path == "missing.txt":
            raise FileNotFoundError(path)
        return f"contents of {path}"

    path = tmp_path / "run.trace.jsonl"
    with ae.Recorder(path, http=False):
        read_file("a.txt")
        for _ in range(3):
            with pytest.raises(FileNotFoundError):
                read_file("missing.txt")
    events = ae.read_trace(path)
    actions = list(actions_of(events))
    assert [(a.args, a.failed, a.seq) for a in actions] == [
        ('{"path":"a.txt"}', False, 1),
        ('{"path":"missing.txt"}', True, 2),
        ('{"path":"missing.txt"}', True, 3),
        ('{"path":"missing.txt"}', True, 4),
    ]
    assert actions == [action_of(event) for event in events if event["type"] == "tool_call"]
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
