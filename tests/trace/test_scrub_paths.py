"""The scrubber's fast paths find exactly what the plain regexes find (issue 22: recording overhead).

Base64 runs are located through a byte mask instead of `_BLOB.finditer`, and the Stripe pattern is
two patterns with literal starts; neither may change what is found or where.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentevals.trace import scrub
from pytest_agentevals.trace.scrub import REDACTED, Scrubber

# Mostly base64 characters, so runs of BLOB_MIN_CHARS and more are common, with the characters
# that end a run or shift offsets: padding, ASCII, Latin-1, wider ones, a lone surrogate.
_RUN = st.text(alphabet="Ab9+/_-", min_size=0, max_size=90)
_BREAK = st.sampled_from(["", "=", "==", "===", " ", ".", "é", "\xff", "€", "\U0001f600", "\ud800", '"'])
_TEXT = st.lists(st.tuples(_RUN, _BREAK), max_size=8).map(lambda parts: "".join(a + b for a, b in parts))


def _by_regex(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group()) for m in scrub._BLOB.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_blob_runs_are_the_regex_matches_offsets_included(text: str) -> None:
    assert list(scrub._blob_runs(text)) == _by_regex(text)


def test_blob_runs_in_wide_text_keep_character_offsets() -> None:
    blob = "QUJD" * 15
    text = "€\U0001f600 " + blob + "==é" + blob
    assert list(scrub._blob_runs(text)) == _by_regex(text)
    assert [run[0] for run in scrub._blob_runs(text)] == [3, 3 + len(blob) + 3]


def test_stripe_secret_and_restricted_keys_are_scrubbed() -> None:
    scrubber = Scrubber(environ={})
    for prefix in ("sk_live_", "sk_test_", "rk_live_", "rk_test_"):
        key = prefix + "Zx9" * 8
        assert scrubber.scrub_text(f"key={key} end") == f"key={REDACTED} end"
    assert scrubber.scrub_text("xk_live_" + "Zx9" * 8) == "xk_live_" + "Zx9" * 8


# Each key pattern is tried only on text holding one of its literal starts (`literal_starts`); that
# may never skip a match: text from the patterns themselves, between other text, as text and as a
# serialized line.
_KEYS = [pattern for pattern in scrub.SECRET_PATTERNS if scrub.literal_starts(pattern.pattern)]
_AROUND = st.text(alphabet='ab -_"\\\né', max_size=12)
_KEYISH = st.lists(
    st.tuples(_AROUND, st.one_of(*(st.from_regex(pattern, fullmatch=True) for pattern in _KEYS))), max_size=3
).map(lambda parts: "".join(a + b for a, b in parts))


def test_every_key_pattern_but_bearer_has_a_literal_start() -> None:
    assert len(_KEYS) == len(scrub.SECRET_PATTERNS) - 1
    assert scrub.literal_starts(r"(?:AKIA|ASIA)[0-9A-Z]{16}") == ("AKIA", "ASIA")
    assert scrub.literal_starts(r"sk-(?:proj-)?[A-Za-z0-9_\-]{32,}") == ("sk-",)
    assert scrub.literal_starts("ab?c") == ("a",)  # an optional character is no start
    assert scrub.literal_starts("ab|cd") == ()  # nor is either side of a bar
    assert scrub.literal_starts("(?i)bearer") == ()


@settings(max_examples=100, deadline=None)
@given(_KEYISH, st.sampled_from(["text", "line"]))
def test_literal_starts_skip_no_match(text: str, view: str) -> None:
    compiled = Scrubber(environ={})._current()
    if view == "line":
        text = json.dumps(text, ensure_ascii=False)
    every = [(regex, what, hint, ()) for regex, what, hint, _ in compiled.regexes(view)]
    plain = scrub._Compiled({}, {view: every})
    assert compiled.find(text, view) == plain.find(text, view)
    assert compiled.search(text, view) == plain.search(text, view)
    for pattern in _KEYS:
        for match in pattern.finditer(text):
            assert match.group().startswith(scrub.literal_starts(pattern.pattern))
