"""The scrubber's search of a line looks for each group's shared literal start once (`sk-` for both
`sk-ant-` keys and `sk-` ones): it must answer as every pattern searched on its own would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentevals.trace.scrub import SECRET_PATTERNS, Scrubber, literal_starts

SECRET = "given-secret-" + "9z" * 6
COMPILED = Scrubber([SECRET], environ={})._current()

# Pieces a line is made of: every literal start, pieces of keys and of words around them, so that a
# start shows with and without the rest of its key.
_STARTS = sorted({start for pattern in SECRET_PATTERNS for start in literal_starts(pattern.pattern)})
_PIECE = st.one_of(
    st.sampled_from(_STARTS),
    st.sampled_from(["api03-", "proj-", "A" * 16, "b" * 36, "_", "-", ".", " ", "Bearer ", "\\n", SECRET]),
    st.sampled_from(["PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "ghp_", "xoxb-", "xapp-1-"]),
    st.text(alphabet="abcXYZ019-_", max_size=40),
)
_TEXT = st.lists(_PIECE, max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(_TEXT, st.sampled_from(["line", "text", "bytes"]))
def test_the_grouped_search_answers_as_each_pattern_searched_alone(text: str, view: str) -> None:
    alone = any(regex.search(text) is not None for regex, _, _, _ in COMPILED.regexes(view))
    assert COMPILED.search(text, view) == alone


def test_the_groups_keep_every_pattern_once() -> None:
    for view in ("line", "text"):
        grouped = [member[0] for _, members in COMPILED.gated(view) for member in members]
        assert sorted(map(id, grouped)) == sorted(id(entry[0]) for entry in COMPILED.regexes(view))
        gates = [gate for gate, _ in COMPILED.gated(view)]
        assert ("sk-",) in gates
        assert ("sk-ant-",) not in gates  # behind `sk-`
