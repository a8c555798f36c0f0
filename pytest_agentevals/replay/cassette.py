"""A cassette: the HTTP interactions and tool calls of one recorded run, ready to be replayed.

Built once by `loader.py` from a trace (or a vcrpy/pytest-recording YAML cassette, `vcr_yaml.py`).
Each recorded request is canonicalized lazily, once, and each response is turned into the bytes the
SDK reads lazily, once, so replaying N steps costs N look-ups, not N scans.
"""

from __future__ import annotations

import functools
import http
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..recording.providers import anthropic
from ..trace.canonical import canonical_request, fingerprint
from ..trace.messages import message_events

CORRUPT_FIX = (
    "the file is damaged: restore it from version control, or re-record it "
    "(pytest --agentevals-record=all, or agentevals record)"
)


@dataclass
class Interaction:
    """One recorded HTTP exchange: the request as the trace stores it and the response to serve.

    `number` is its 1-based position among the cassette's HTTP exchanges, `line` its line in the
    file (0 when unknown), `step` the recorded step it belongs to.
    """

    number: int
    line: int
    step: int | None
    request: dict[str, Any]
    response: dict[str, Any]
    is_model: bool = True
    vcr_form: dict[str, Any] | None = None  # a YAML cassette's response, served as stored
    raw_body: bytes | None = None  # a YAML cassette's request body, as sent
    _canonical: dict[str, Any] | None = field(default=None, repr=False)
    _fingerprint: str | None = field(default=None, repr=False)
    _served: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def canonical(self) -> dict[str, Any]:
        """The request in canonical form (see `recording/canonical.py`), computed once."""
        if self._canonical is None:
            request = self.request
            body = request["body"] if "body" in request else request.get("body_raw")
            self._canonical = canonical_request(request.get("method", "POST"), request.get("url", ""), body)
        return self._canonical

    @property
    def fingerprint(self) -> str:
        """`canonical.fingerprint` of the request: the same key the step layer uses. Computed once."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self.canonical)
        return self._fingerprint

    @property
    def route(self) -> tuple[str, str]:
        """(METHOD, path) of the request: what sequential replay keeps separate queues for."""
        canonical = self.canonical
        return canonical["method"], canonical["path"].split("?", 1)[0]

    @property
    def label(self) -> str:
        where = f", line {self.line}" if self.line else ""
        step = (
            f" (step {self.step}{where})" if self.step is not None else (f" ({where[2:]})" if where else "")
        )
        kind = "model call" if self.is_model else "HTTP call"
        return f"recorded {kind} {self.number}{step}"

    def served_response(self) -> dict[str, Any]:
        """The response in the form vcrpy's httpx stubs turn into a real response. Built once."""
        if self._served is None:
            if self.vcr_form is not None:
                self._served = self.vcr_form
            else:
                self._served = _vcr_response(_as_streamed(self.request, self.response))
        return self._served


@dataclass
class ToolRecord:
    """One recorded `@tool` call: its input, and its output or its error {type, message}."""

    number: int
    line: int
    step: int | None
    name: str
    input: Any
    output: Any = None
    error: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        where = f", line {self.line}" if self.line else ""
        return f"recorded tool call {self.number} {self.name!r} (step {self.step}{where})"


@dataclass
class Cassette:
    """A recorded run, as replay needs it.

    `interactions` are the HTTP exchanges in recorded order, `tools` the `@tool` calls (None for a
    cassette that does not record tools, such as a vcrpy YAML cassette: its tools run for real).
    `checkpoint` is the checkpoint event a `from_step` replay starts from.
    """

    path: Path
    kind: str  # "trace" or "vcr-yaml"
    interactions: list[Interaction]
    tools: list[ToolRecord] | None
    run_start: dict[str, Any] = field(default_factory=dict)
    run_end: dict[str, Any] | None = None
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    checkpoint: dict[str, Any] | None = None
    from_step: int | None = None
    _by_fingerprint: dict[str, list[Interaction]] | None = field(default=None, repr=False)
    _message_json: dict[int, str] = field(default_factory=dict, repr=False)

    @property
    def task(self) -> Any:
        """The run's initial task (`run_start.task`), what an agent runner starts the agent with."""
        return self.run_start.get("task")

    @property
    def contract(self) -> dict[str, Any]:
        """The environment contract recorded at run_start (python, package versions, declared keys)."""
        value = self.run_start.get("contract")
        return value if isinstance(value, dict) else {}

    @property
    def model_calls(self) -> list[Interaction]:
        return [interaction for interaction in self.interactions if interaction.is_model]

    def request_bytes(self, interaction: Interaction) -> bytes | None:
        """The bytes an HTTP client (httpx's `json=`) sends for this recorded request, or None.

        Recorded bodies share their message objects with the previous request (the trace stores
        deltas), so each message is serialized once for the whole cassette and a request's bytes
        cost a join, not a serialization of its whole history. Not cached: one comparison each.
        """
        return _request_bytes(interaction, self._message_json)

    def by_fingerprint(self, key: str) -> list[Interaction]:
        """The recorded exchanges whose request has this `canonical.fingerprint`, in recorded order.

        The index is built on first use (one pass over the cassette).
        """
        if self._by_fingerprint is None:
            index: dict[str, list[Interaction]] = {}
            for interaction in self.interactions:
                index.setdefault(interaction.fingerprint, []).append(interaction)
            self._by_fingerprint = index
        return self._by_fingerprint.get(key, [])


_dumps = functools.partial(json.dumps, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _request_bytes(interaction: Interaction, message_json: dict[int, str]) -> bytes | None:
    if interaction.raw_body is not None:
        return interaction.raw_body
    body = interaction.request.get("body")
    if not isinstance(body, dict):
        return None
    parts: list[str] = []
    try:
        for key, value in body.items():
            if key == "messages" and isinstance(value, list):
                texts = []
                for message in value:
                    text = message_json.get(id(message))
                    if text is None:
                        text = message_json[id(message)] = _dumps(message)
                    texts.append(text)
                parts.append(f"{_dumps(key)}:[{','.join(texts)}]")
            else:
                parts.append(f"{_dumps(key)}:{_dumps(value)}")
    except (TypeError, ValueError):
        return None
    return ("{" + ",".join(parts) + "}").encode("utf-8")


def _as_streamed(request: Mapping[str, Any], stored: Mapping[str, Any]) -> Mapping[str, Any]:
    """A response stored whole (an imported run's message) to a request that asked for a stream,
    as the stream the API sends; any other response as stored."""
    body = request.get("body")
    message = stored.get("json")
    if not (isinstance(body, Mapping) and body.get("stream") is True and "sse" not in stored):
        return stored
    if not (isinstance(message, Mapping) and message.get("type") == "message"):
        return stored
    rest = {key: value for key, value in stored.items() if key != "json"}
    return {**rest, "sse": message_events(message)}


def _vcr_response(stored: Mapping[str, Any]) -> dict[str, Any]:
    status = stored.get("status", 200)
    code = status if isinstance(status, int) else 200
    try:
        message = http.HTTPStatus(code).phrase
    except ValueError:
        message = ""
    headers = {str(name): [str(value)] for name, value in (stored.get("headers") or {}).items()}
    if code == 429 or code >= 500:
        # The SDK retries these after the delay the response asks for; a replay does not wait out
        # the recorded delay (retry-after-ms comes first for the SDK).
        headers["retry-after-ms"] = ["1"]
    return {
        "status": {"code": code, "message": message},
        "headers": headers,
        "body": {"string": anthropic.encode_body(stored)},
    }
