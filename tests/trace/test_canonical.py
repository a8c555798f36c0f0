"""The one canonical JSON text: for a JSON value exactly the text every stored hash and key was made
from (`json.dumps` with sorted keys, compact, UTF-8 kept); for anything else what the writer stores."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentevals.trace.jsonable import canonical_json, to_jsonable
from pytest_agentevals.trace.writer import serialize

ROOT = Path(__file__).resolve().parents[2]
# The encoding the fingerprints, contract hashes and variant keys of stored data were made with.
STORED = functools.partial(json.dumps, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(codec=None, categories=None)),  # lone surrogates included
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_a_json_value_gives_the_stored_text(value: Any) -> None:
    assert canonical_json(value) == STORED(value)


@pytest.mark.parametrize(
    "value",
    [
        "é\u2028\udcff",
        {"b": 1, "a": [{"z": None, "é": "ü"}, -0.0, 1e300, math.inf, 10**30]},
        [],
        {},
        {"x": {"": {"y": [True, False]}}},
        {"tools": [{"name": "read", "input_schema": {"type": "object", "properties": {}}}]},
    ],
)
def test_the_edges_of_json_give_the_stored_text(value: Any) -> None:
    assert canonical_json(value) == STORED(value)


def _checked_in_events() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for folder in ("cassettes", "goldens", "fixtures"):
        for path in sorted((ROOT / folder).rglob("*.jsonl")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                found.append((f"{path.relative_to(ROOT)}:{number}", json.loads(line)))
    return found


def test_every_checked_in_event_gives_the_stored_text() -> None:
    events = _checked_in_events()
    assert len(events) > 100  # the repository's cassettes, goldens and fixtures were found
    assert [where for where, event in events if canonical_json(event) != STORED(event)] == []


def test_a_value_json_cannot_hold_is_written_as_the_writer_stores_it() -> None:
    value = {"b": Path("a.txt"), "a": (1, 2), "c": b"\xff", "d": {3}}
    assert canonical_json(value) == '{"a":[1,2],"b":"a.txt","c":"\ufffd","d":[3]}'
    assert canonical_json(value) == STORED(json.loads(serialize(value)))
    looped: list[Any] = [1]
    looped.append(looped)
    assert canonical_json(looped) == STORED(to_jsonable(looped))
    assert canonical_json({1: "a", "b": 2}) == STORED(json.loads(json.dumps(to_jsonable({1: "a", "b": 2}))))
