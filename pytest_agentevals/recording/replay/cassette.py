"""A cassette: the HTTP interactions and tool calls of one recorded run, ready to be replayed.

Loaded once from a trace (or a vcrpy/pytest-recording YAML cassette, see `vcr_yaml.py`). Each
recorded request is canonicalized lazily, once, and each response is turned into the bytes the SDK
reads lazily, once, so replaying N steps costs N look-ups, not N scans.

A cassette that cannot be replayed (missing, corrupt, truncated, no checkpoint at `from_step`)
raises `CassetteError` naming the file, the line and the fix. Nothing is ever read from the network
instead.
"""

from __future__ import annotations

import functools
import http
import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import CassetteError, TraceFormatError
from ...trace.events import Event
from ...trace.reader import TornTraceWarning, TraceReader
from ..canonical import canonical_request, fingerprint
from ..providers import anthropic

YAML_SUFFIXES = (".yaml", ".yml")

CORRUPT_FIX = (
    "the file is damaged: restore it from version control, or re-record it "
    "(pytest --agentevals-record=all, or agentevals record)"
)
TRUNCATED_FIX = (
    "the recording was cut off: re-record it, or run `agentevals promote` on it, which keeps every "
    "complete event and closes the run"
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
                self._served = _vcr_response(self.response)
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


def load_cassette(path: str | Path, from_step: int | None = None) -> Cassette:
    """Load a trace (`*.trace.jsonl`) or a vcrpy/pytest-recording YAML cassette for replay.

    With `from_step`, the cassette starts after the last checkpoint at or before that step: the
    harness boots from `cassette.checkpoint["state"]` and the replay serves what followed it.
    """
    path = Path(path)
    if not path.exists():
        raise CassetteError(
            path,
            0,
            "no such cassette",
            "record it: pytest --agentevals-record=once, or `agentevals record`; or check the name",
        )
    if path.is_dir():
        raise CassetteError(path, 0, "is a directory, not a cassette", "name a .trace.jsonl or .yaml file")
    if path.suffix in YAML_SUFFIXES:
        from .vcr_yaml import load_vcr_yaml

        if from_step is not None:
            raise CassetteError(
                path, 0, "a vcrpy YAML cassette has no steps or checkpoints", "drop from_step, or use a trace"
            )
        return load_vcr_yaml(path)
    cassette = _load_trace(path)
    return cassette if from_step is None else _from_step(cassette, from_step)


def _load_trace(path: Path) -> Cassette:
    reader = TraceReader(path)
    events: list[Event] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornTraceWarning)
            events = list(reader)
    except TraceFormatError as exc:
        if exc.line == 0:
            raise CassetteError(path, 0, exc.problem, CORRUPT_FIX) from None
        raise CassetteError(path, exc.line, exc.problem, CORRUPT_FIX) from None
    if reader.problems:
        raise CassetteError(
            path,
            len(events) + 1,
            "the last line is incomplete: the recording was cut off mid-write",
            TRUNCATED_FIX,
        )
    if not events or events[-1].get("type") != "run_end":
        raise CassetteError(
            path,
            len(events),
            f"the recording ends after {len(events)} events without a run_end event: the run was cut off",
            TRUNCATED_FIX,
        )
    return _cassette_of(path, events, start_line=1, run_start=events[0])


def _cassette_of(path: Path, events: list[Event], start_line: int, run_start: dict[str, Any]) -> Cassette:
    interactions: list[Interaction] = []
    tools: list[ToolRecord] = []
    checkpoints: list[dict[str, Any]] = []
    run_end: dict[str, Any] | None = None
    for offset, event in enumerate(events):
        line = start_line + offset
        kind = event.get("type")
        if kind == "model_call":
            interactions.append(_interaction(path, line, len(interactions) + 1, event))
        elif kind == "tool_call":
            tools.append(
                ToolRecord(
                    number=len(tools) + 1,
                    line=line,
                    step=event.get("step"),
                    name=str(event.get("name")),
                    input=event.get("input"),
                    output=event.get("output"),
                    error=event.get("error") if isinstance(event.get("error"), dict) else None,
                )
            )
        elif kind == "checkpoint":
            checkpoints.append({**event, "line": line})
        elif kind == "run_end":
            run_end = event
    return Cassette(
        path=path,
        kind="trace",
        interactions=interactions,
        tools=tools,
        run_start=run_start,
        run_end=run_end,
        checkpoints=checkpoints,
    )


def _interaction(path: Path, line: int, number: int, event: Event) -> Interaction:
    request, response = event.get("request"), event.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise CassetteError(path, line, "model_call needs a request and a response object", CORRUPT_FIX)
    return Interaction(
        number=number,
        line=line,
        step=event.get("step"),
        request=request,
        response=response,
        is_model=event.get("provider") != "http",
    )


def _from_step(cassette: Cassette, step: int) -> Cassette:
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise CassetteError(cassette.path, 0, f"from_step={step!r} is not a step number", "give an int >= 0")
    before = [c for c in cassette.checkpoints if isinstance(c.get("step"), int) and c["step"] <= step]
    if not before:
        known = ", ".join(str(c.get("step")) for c in cassette.checkpoints) or "none"
        raise CassetteError(
            cassette.path,
            0,
            f"no checkpoint at or before step {step} (checkpoints at steps: {known})",
            "replay from one of those steps, or from the start",
        )
    checkpoint = before[-1]
    # Numbers stay those of the whole recording, so a message points at the right place in the file.
    after = [i for i in cassette.interactions if i.line > checkpoint["line"]]
    tools = [t for t in cassette.tools or () if t.line > checkpoint["line"]]
    return Cassette(
        path=cassette.path,
        kind=cassette.kind,
        interactions=after,
        tools=tools,
        run_start=cassette.run_start,
        run_end=cassette.run_end,
        checkpoints=cassette.checkpoints,
        checkpoint=checkpoint,
        from_step=step,
    )
