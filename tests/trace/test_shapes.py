"""More key shapes and encodings (issue 17): each is scrubbed at record time and found by
`agentevals scan`, a key inside a base64 blob (msgpack or JSON inside) included.

The keys are built from pieces so this file itself holds none."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

import pytest_agentevals as ae
from pytest_agentevals.trace import TraceWriter
from pytest_agentevals.trace.scrub import BLOB_MAX_CHARS, REDACTED, Scrubber

from ..conftest import run_agentevals

FILLER = "Q7xK9mP2vL4nR8tW3yZ6bC1dF5gH0jS"
SHAPES = {
    "github fine-grained": "github" + "_pat_11A" + FILLER + "_" + FILLER + "abcdef",
    "jwt": "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + "." + FILLER,
    "pem": "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIE" + FILLER + "\n" + FILLER + "==\n-----END RSA "
    "PRIVATE KEY-----",
    "google": "AI" + "za" + "Sy" + FILLER[:29] + "0123",  # 39 characters, as Google issues them
    "stripe": "sk" + "_live_" + FILLER,
    "aws": "AK" + "IA" + "IOSFODNN7" + "ZQXWVUT",
    "slack": "xo" + "xb-" + "1234567890-" + FILLER,
    "openai project": "sk-" + "proj-" + FILLER + FILLER,
}


def _msgpack_state(key: str) -> bytes:
    """A msgpack map {"api": key, "n": 1}, as a framework's checkpoint state stores it."""
    return b"\x82\xa3api\xd9" + bytes([len(key)]) + key.encode() + b"\xa1n\x01"


def _write(path: Path, message: str) -> None:
    with TraceWriter(path) as writer:
        writer.write(
            {"type": "run_start", "v": 1, "run_id": "r", "agent": "a", "started_at": "", "contract": {}}
        )
        writer.write({"type": "note", "seq": 1, "t": 0, "step": 0, "message": message})


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_key_shape_is_scrubbed_at_record_time(tmp_path: Path, shape: str) -> None:
    key = SHAPES[shape]
    _write(tmp_path / "a.trace.jsonl", f"the key is {key} .")
    stored = (tmp_path / "a.trace.jsonl").read_text()
    assert key not in stored
    assert json.dumps(key)[1:-1] not in stored  # nor JSON-escaped (a PEM's newlines)
    assert ae.read_trace(tmp_path / "a.trace.jsonl")[1]["message"] == f"the key is {REDACTED} ."


def test_every_key_shape_is_found_by_scan(tmp_path: Path) -> None:
    lines = [json.dumps({"type": "note", "message": key}) for key in SHAPES.values()]
    (tmp_path / "peer.trace.jsonl").write_text("\n".join(lines) + "\n")
    result = run_agentevals("scan", ".", cwd=tmp_path)
    assert result.returncode == 1
    found = [line for line in result.stdout.splitlines() if line.startswith("peer.trace.jsonl:")]
    assert [line.split(":")[1] for line in found] == [str(n) for n in range(1, len(SHAPES) + 1)]


@pytest.mark.parametrize("wrap", ["msgpack", "json", "base64 in json", "urlsafe"])
def test_a_key_inside_a_base64_blob_is_scrubbed_and_found(tmp_path: Path, wrap: str) -> None:
    key = SHAPES["stripe"]
    if wrap == "msgpack":
        blob = base64.b64encode(_msgpack_state(key)).decode()
    elif wrap == "json":
        blob = base64.b64encode(json.dumps({"state": {"api": key}}).encode()).decode()
    elif wrap == "base64 in json":
        inner = base64.b64encode(json.dumps({"api": key}).encode()).decode()
        blob = base64.b64encode(json.dumps({"checkpoint": inner}).encode()).decode()
    else:
        blob = base64.urlsafe_b64encode(b"\xff\xfe" + _msgpack_state(key)).decode().rstrip("=")
    _write(tmp_path / "a.trace.jsonl", f"state={blob}")
    (message,) = [e["message"] for e in ae.read_trace(tmp_path / "a.trace.jsonl") if e["type"] == "note"]
    assert message != f"state={blob}"
    stored = message.removeprefix("state=")
    decoded = base64.urlsafe_b64decode(stored + "==") if wrap == "urlsafe" else base64.b64decode(stored)
    assert key.encode() not in decoded
    assert key not in decoded.decode("latin-1")
    if wrap == "msgpack":  # masked in place: the msgpack lengths still hold
        assert decoded == _msgpack_state("*" * len(key))
    (tmp_path / "peer.trace.jsonl").write_text(json.dumps({"type": "note", "message": blob}) + "\n")
    result = run_agentevals("scan", "peer.trace.jsonl", cwd=tmp_path)
    assert result.returncode == 1
    assert "peer.trace.jsonl:1: API-key pattern, inside base64" in result.stdout


def test_blob_work_is_bounded() -> None:
    """A blob longer than BLOB_MAX_CHARS is searched in its first BLOB_MAX_CHARS characters only."""
    key = SHAPES["stripe"]
    early = base64.b64encode(key.encode() + b"\x00" * (BLOB_MAX_CHARS // 2)).decode()
    late = base64.b64encode(b"\x00" * BLOB_MAX_CHARS + key.encode()).decode()
    scrubber = Scrubber(environ={})
    assert scrubber.find(early)
    assert scrubber.find(late) == []
    assert len(scrubber.scrub_text(early)) == len(early)  # re-encoded in place
