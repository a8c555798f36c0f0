"""Checkpoint states stored as deltas against the previous checkpoint's (issue 19, item 4): a trace
grows with what each step added to the state, reads back whole, refuses a crafted delta, and a trace
of whole states (written before deltas existed) still reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentevals.errors import TraceFormatError
from pytest_agentevals.trace import delta
from pytest_agentevals.trace.reader import TraceReader, read_trace
from pytest_agentevals.trace.writer import TraceWriter

from ..schema_support import VALIDATOR
from .test_expansion import END, START, write_lines


def checkpoint(seq: int, state: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "checkpoint", "seq": seq, "t": 0.0, "step": seq, **fields}
    if state is not None:
        event["state"] = state
    return event


def states(path: Path) -> list[dict[str, Any]]:
    return [event["state"] for event in read_trace(path) if event["type"] == "checkpoint"]


def test_a_growing_state_is_stored_as_deltas_and_reads_back_whole(tmp_path: Path) -> None:
    trace = tmp_path / "run.trace.jsonl"
    written: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    state = {"framework": "x", "values": {"messages": messages, "done": 0}, "next": ["work"]}
    with TraceWriter(trace) as writer:
        writer.write(START)
        for step in range(1, 41):
            messages.append({"role": "assistant", "content": f"wrote note {step} " + "x" * 200})
            state["values"]["done"] = step  # changed in place, as a harness may
            state["next"] = [] if step == 40 else ["work"]
            writer.write(checkpoint(step, state))
            written.append(json.loads(json.dumps(state)))
        writer.write(END)
    assert states(trace) == written
    for line in trace.read_text().splitlines()[1:-1]:
        VALIDATOR.validate(json.loads(line))  # deltas too are what the documented schema says
    lines = trace.read_text().splitlines()
    stored = [json.loads(line) for line in lines[1:-1]]
    assert "state" in stored[0]
    assert all("state_delta" in event and "state" not in event for event in stored[1:])
    # Linear: the last checkpoint's line is as small as the second's, though its state is 40 times larger.
    assert len(lines[-2]) < 2 * len(lines[2])
    assert stored[5]["state_delta"]["patch"]["values"]["extend"]["messages"]["keep"] == 5


def test_a_state_sharing_nothing_is_stored_whole(tmp_path: Path) -> None:
    trace = tmp_path / "run.trace.jsonl"
    with TraceWriter(trace) as writer:
        writer.write(START)
        writer.write(checkpoint(1, {"a": 1}))
        writer.write(checkpoint(2, {"b": 2}))
        writer.write(END)
    assert ["state" in json.loads(line) for line in trace.read_text().splitlines()[1:3]] == [True, True]
    assert states(trace) == [{"a": 1}, {"b": 2}]


def test_a_trace_of_whole_states_still_reads(tmp_path: Path) -> None:
    old = write_lines(
        tmp_path / "old.trace.jsonl", [START, checkpoint(1, {"n": [1]}), checkpoint(2, {"n": [1, 2]}), END]
    )
    assert states(old) == [{"n": [1]}, {"n": [1, 2]}]


@pytest.mark.parametrize(
    ("second", "expected"),
    [
        (
            {"state_delta": {"extend": {"n": {"keep": 5, "append": []}}}},
            "keeps 5 items of 'n', where the previous state has a list of 1",
        ),
        ({"state_delta": {"patch": {"n": {}}}}, "patches 'n', which is not an object"),
        ({"state_delta": {"replace": {}}}, "state_delta must be an object with only"),
        ({"state_delta": {"extend": {"n": {"keep": "all"}}}}, "without an integer 'keep'"),
        ({"state": {}, "state_delta": {}}, "both state and state_delta"),
    ],
)
def test_a_bad_state_delta_is_one_error_naming_the_line(
    tmp_path: Path, second: dict[str, Any], expected: str
) -> None:
    trace = write_lines(
        tmp_path / "bad.trace.jsonl", [START, checkpoint(1, {"n": [1]}), checkpoint(2, **second), END]
    )
    with pytest.raises(TraceFormatError, match=rf"bad\.trace\.jsonl:3: .*{expected}"):
        read_trace(trace)


def test_a_state_delta_with_nothing_before_it_is_refused_even_unresolved(tmp_path: Path) -> None:
    trace = write_lines(
        tmp_path / "bad.trace.jsonl", [START, checkpoint(1, state_delta={"set": {"n": 1}}), END]
    )
    for resolve in (True, False):
        with pytest.raises(
            TraceFormatError, match=r":2: checkpoint.state_delta with no earlier checkpoint state"
        ):
            list(TraceReader(trace, resolve=resolve))


def test_state_deltas_that_keep_everything_do_not_expand_without_bound(tmp_path: Path) -> None:
    # A state of 20,000 items, then 2,000 deltas that keep them all: 12 KB of deltas that would
    # resolve into 40 million references.
    big = {"items": list(range(20_000))}
    bomb = [
        checkpoint(n, state_delta={"extend": {"items": {"keep": 20_000, "append": []}}})
        for n in range(2, 2002)
    ]
    trace = write_lines(tmp_path / "bomb.trace.jsonl", [START, checkpoint(1, big), *bomb, END])
    with pytest.raises(TraceFormatError, match="checkpoint state deltas expand"):
        read_trace(trace)
    assert sum(1 for _ in TraceReader(trace, resolve=False)) == 2003  # checked, not applied


def test_deep_patches_are_bounded_in_depth() -> None:
    nested: dict[str, Any] = {}
    for _ in range(delta.STATE_DEPTH):
        nested = {"patch": {"k": nested}}
    with pytest.raises(ValueError, match="deeper than"):
        delta.check_state(nested)


def test_a_frozen_object_is_kept_itself_not_copied(tmp_path: Path) -> None:
    """`delta.Frozen` (what its maker never changes: the LangGraph adapter's encoded messages) is kept
    by the writer itself for the next delta, which then settles it by `is`; anything else is copied."""
    frozen = [delta.Frozen({"role": "user", "content": "a"}), delta.Frozen({"role": "ai", "content": "b"})]
    plain = {"role": "ai", "content": "c"}
    with TraceWriter(tmp_path / "run.trace.jsonl") as writer:
        writer.write(START)
        writer.write(checkpoint(1, {"values": {"messages": frozen[:1]}}))
        writer.write(checkpoint(2, {"values": {"messages": [*frozen, plain]}, "next": ["work"]}))
        kept = writer._previous_state["values"]["messages"]
    assert kept[0] is frozen[0]
    assert kept[1] is frozen[1]
    assert kept[2] == plain
    assert kept[2] is not plain


ITEMS = st.builds(lambda n, text: {"n": n, "text": text}, st.integers(0, 3), st.sampled_from(["a", "b"]))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["append", "replace", "drop", "nest", "count"]), st.integers(0, 5), ITEMS),
        max_size=10,
    )
)
def test_a_trace_of_frozen_objects_is_the_trace_of_their_copies(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, dict[str, Any]]]
) -> None:
    """Whatever a run does with its frozen objects (kept, appended, replaced by equal or other ones,
    moved deeper), its trace is byte for byte the trace of a harness handing over fresh copies, and
    reads back as the states were."""
    folder = tmp_path_factory.mktemp("frozen")
    messages: list[Any] = []
    state: dict[str, Any] = {"values": {"messages": messages, "deep": {"inner": {}}}, "count": 0}
    given_states = []
    for action, at, item in steps:
        if action == "append":
            messages.append(delta.Frozen(item))
        elif action == "replace" and messages:
            messages[at % len(messages)] = delta.Frozen(item)
        elif action == "drop" and messages:
            del messages[at % len(messages)]
        elif action == "nest":
            state["values"]["deep"]["inner"][f"k{at % 2}"] = (
                delta.Frozen(item) if at % 3 else [delta.Frozen(item)]
            )
        else:
            state["count"] += 1
        # What the adapter hands over at each checkpoint: new containers, the frozen objects shared.
        given_states.append(
            {
                "values": {
                    "messages": list(messages),
                    "deep": {"inner": dict(state["values"]["deep"]["inner"])},
                },
                "count": state["count"],
            }
        )
    texts = []
    for name, hand_over in (("frozen", lambda s: s), ("copies", lambda s: json.loads(json.dumps(s)))):
        trace = folder / f"{name}.trace.jsonl"
        with TraceWriter(trace) as writer:
            writer.write(START)
            for seq, given_state in enumerate(given_states, 1):
                writer.write(checkpoint(seq, hand_over(given_state)))
            writer.write(END)
        assert states(trace) == json.loads(json.dumps(given_states))
        texts.append(trace.read_text())
    assert texts[0] == texts[1]


def _prefix_by_steps(previous: list[Any], current: list[Any]) -> int:
    index = 0
    while index < min(len(previous), len(current)) and (
        previous[index] is current[index] or previous[index] == current[index]
    ):
        index += 1
    return index


_ITEMS = st.one_of(st.integers(0, 3), st.sampled_from(["a", "b"]), st.just(float("nan")), st.none())


@settings(max_examples=200, deadline=None)
@given(st.lists(_ITEMS, max_size=8), st.lists(_ITEMS, max_size=4), st.integers(0, 8), st.booleans())
def test_the_common_prefix_is_the_item_by_item_one(
    previous: list[Any], tail: list[Any], cut: int, shared: bool
) -> None:
    # The same objects (a history resent) or equal copies (a state read back from its JSON), cut
    # anywhere and grown: NaN is settled by `is` alone, as a delta's comparison settles it.
    kept = previous[:cut] if shared else [json.loads(json.dumps(item)) for item in previous[:cut]]
    current = kept + tail
    assert delta.common_prefix(previous, current) == _prefix_by_steps(previous, current)
