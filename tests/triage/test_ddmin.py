"""ddmin's promises, as properties: what it returns still fails, is 1-minimal, keeps the input's
order, and with one cause only, is exactly that cause."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentevals.errors import TriageError
from pytest_agentevals.triage import ddmin

# A failure is caused by any one of a few sets of items being present together ("cores").
cores = st.lists(st.frozensets(st.integers(0, 39), min_size=1, max_size=4), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(size=st.integers(1, 40), causes=cores)
def test_the_result_still_fails_and_is_one_minimal(size: int, causes: list[frozenset[int]]) -> None:
    causes = [core for core in causes if max(core) < size] or [frozenset({size - 1})]

    def fails(subset: list[int]) -> bool:
        present = set(subset)
        return any(core <= present for core in causes)

    reduced = ddmin(list(range(size)), fails)
    assert fails(reduced.items)
    assert reduced.items == sorted(reduced.items)  # the input's order
    for i in range(len(reduced.items)):
        assert not fails(reduced.items[:i] + reduced.items[i + 1 :])


@settings(max_examples=100, deadline=None)
@given(size=st.integers(1, 64), data=st.data())
def test_one_cause_is_found_exactly_and_cheaply(size: int, data: st.DataObject) -> None:
    cause = data.draw(st.frozensets(st.integers(0, size - 1), min_size=1, max_size=2))
    reduced = ddmin(list(range(size)), lambda subset: cause <= set(subset))
    assert set(reduced.items) == cause
    assert reduced.kept == sorted(cause)
    if len(cause) == 1:
        assert reduced.tests <= 4 * max(1, size.bit_length()) + 2


def test_it_needs_a_failing_input() -> None:
    with pytest.raises(TriageError, match="needs an input that fails"):
        ddmin([1, 2, 3], lambda subset: False)
    assert ddmin([1, 2], lambda subset: True).items == []
