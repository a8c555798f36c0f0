"""The scrubber's fast paths find exactly what the plain regexes find (issue 22: recording overhead).

Base64 runs are located through a byte mask instead of `_BLOB.finditer`, and the Stripe pattern is
two patterns with literal starts; neither may change what is found or where.
"""

from __future__ import annotations

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
