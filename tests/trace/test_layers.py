"""A key under one more layer of encoding (issue 35): percent-encoded (a URL, a form body) or
JSON-escaped (JSON held in a string) — scrubbed by every writer, found by `agentevals scan`, kept
out of a Claude Code session file; and no finding or refusal prints a character of a secret.

The keys are built from pieces so this file itself holds none."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

import pytest_agentevals as ae
from pytest_agentevals.endpoint import conversation_state, write_claude_session
from pytest_agentevals.report.scan import scan
from pytest_agentevals.trace import TraceWriter
from pytest_agentevals.trace.layers import VIEW_MAX_CHARS, views
from pytest_agentevals.trace.scrub import REDACTED, Scrubber

from ..conftest import make_fake_key, run_agentevals
from .test_shapes import SHAPES

BEARER = "Bear" + "er " + "Q7xK9mP2vL4nR8tW3yZ6bC1dF5gH0jS/+="


def json_escaped(text: str) -> str:
    """Every character but letters and digits as `\\uXXXX`, and `/` as `\\/`: JSON a strict encoder
    (or a hostile one) may write inside a string."""
    return "".join(c if c.isalnum() else "\\/" if c == "/" else f"\\u{ord(c):04x}" for c in text)


ENCODINGS = {
    "percent": quote,
    "percent, plus for space": quote_plus,
    "percent twice": lambda text: quote(quote(text)),
    "JSON-escaped": json_escaped,
}
SECRETS = {"pem": SHAPES["pem"], "bearer": BEARER, "anthropic": make_fake_key("layers"), "jwt": SHAPES["jwt"]}


def _write(path: Path, message: str) -> None:
    with TraceWriter(path) as writer:
        writer.write(
            {"type": "run_start", "v": 1, "run_id": "r", "agent": "a", "started_at": "", "contract": {}}
        )
        writer.write({"type": "note", "seq": 1, "t": 0, "step": 0, "message": message})


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("secret", sorted(SECRETS))
def test_an_encoded_key_is_scrubbed_at_record_time_and_found_by_scan(
    tmp_path: Path, secret: str, encoding: str
) -> None:
    encoded = ENCODINGS[encoding](SECRETS[secret])
    if secret == "anthropic" and encoding.startswith("percent") and encoding != "percent twice":
        pytest.skip("the key's characters are all unreserved: percent-encoding leaves it as it is")
    message = f"GET /callback?auth={encoded}&next=1 done"
    peer = tmp_path / "peer.trace.jsonl"
    peer.write_text(json.dumps({"type": "note", "message": message}) + "\n")  # written by hand: unscrubbed
    found = scan([peer], environ={})
    assert len(found) == 1, found
    _write(tmp_path / "a.trace.jsonl", message)
    stored = (tmp_path / "a.trace.jsonl").read_text()
    assert encoded not in stored
    assert (
        ae.read_trace(tmp_path / "a.trace.jsonl")[1]["message"]
        == f"GET /callback?auth={REDACTED}&next=1 done"
    )


def test_a_key_cut_short_by_an_escape_is_replaced_whole() -> None:
    # A bearer token with a JSON-escaped slash: its first 16 characters alone match directly, and the
    # rest would stay behind were the direct finding kept as it is.
    text = "Authorization: Bearer abcdefghijklmnopqrst\\/uvwxyz0123456789 end"
    assert Scrubber(environ={}).scrub_text(text) == f"Authorization: {REDACTED} end"


def test_a_secret_value_of_the_environment_is_found_under_a_layer() -> None:
    value = "svc-value-1234/5678"
    scrubber = Scrubber(environ={"SVC_TOKEN": value})
    assert scrubber.scrub_text("x=" + json_escaped(value)) == f"x={REDACTED}"
    assert scrubber.scrub_text("x=" + quote(quote(value))) == f"x={REDACTED}"


def test_plain_text_has_no_view_and_a_view_is_bounded() -> None:
    assert list(views("a tool output with 100% of nothing and C:\\path")) == []
    big = "%41" * (VIEW_MAX_CHARS // 3 + 1000)
    (view,) = views(big)
    assert len(view.text) <= VIEW_MAX_CHARS


def test_the_writers_line_check_never_skips_an_encoded_key(tmp_path: Path) -> None:
    scrubber = Scrubber(environ={})
    for secret in SECRETS.values():
        for encode in ENCODINGS.values():
            line = json.dumps({"type": "note", "message": encode(secret)})
            if scrubber.scrub_text(encode(secret)) != encode(secret):
                assert scrubber.might_hold(line), line


def test_the_claude_code_session_writer_scrubs(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": f"deploy with {SHAPES['stripe']} and {quote(SHAPES['pem'])}"},
        {"role": "assistant", "content": [{"type": "text", "text": f"using {BEARER}"}]},
    ]
    body = {"model": "m", "max_tokens": 5, "messages": messages}
    session = write_claude_session(conversation_state(body, "/v1/messages"), tmp_path, tmp_path / "config")
    (written,) = (tmp_path / "config").glob(f"projects/*/{session}.jsonl")
    text = written.read_text()
    for secret in (SHAPES["stripe"], quote(SHAPES["pem"]), BEARER.split()[1]):
        assert secret not in text
    assert text.count(REDACTED) == 3
    assert [json.loads(line)["type"] for line in text.splitlines()] == ["user", "assistant"]


# -- nothing of a secret printed -----------------------------------------------------------------------


def _pieces(secret: str) -> list[str]:
    """Every 4 characters of `secret` in a row: none may be printed."""
    return [secret[i : i + 4] for i in range(len(secret) - 3)]


def test_scan_prints_the_kind_and_length_of_a_secret_never_a_character(tmp_path: Path) -> None:
    key = make_fake_key("zqxw")
    token = "svc-" + "t0k3n-v4lu3-9x"
    (tmp_path / "a.trace.jsonl").write_text(
        json.dumps({"type": "note", "message": f"{key} and {token}"}) + "\n"
    )
    result = run_agentevals("scan", ".", cwd=tmp_path, env={"SVC_TOKEN": token})
    assert result.returncode == 1
    out = result.stdout + result.stderr
    assert sorted(result.stdout.splitlines()) == [
        f"a.trace.jsonl:1: API-key pattern ({len(key)} characters)",
        f"a.trace.jsonl:1: the value of $SVC_TOKEN ({len(token)} characters)",
    ]
    assert [piece for piece in _pieces(key[7:]) + _pieces(token) if piece in out] == []


def test_the_reports_refusal_names_the_kind_and_length_never_a_character(tmp_path: Path) -> None:
    key = make_fake_key("zqxv")
    trace = tmp_path / "run.trace.jsonl"
    lines = [
        {"type": "run_start", "v": 1, "run_id": "r", "agent": "a", "started_at": "", "contract": {}},
        {"type": "note", "seq": 1, "t": 0.0, "step": 0, "message": f"leaked {key}"},
        {"type": "run_end", "seq": 2, "t": 0.1, "status": "ok", "totals": {}},
    ]
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))  # by hand: unscrubbed
    result = run_agentevals("report", trace, "-o", tmp_path / "page.html", cwd=tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"API-key pattern ({len(key)} characters)" in out, out
    assert [piece for piece in _pieces(key[7:]) if piece in out] == []
    assert not (tmp_path / "page.html").exists()
