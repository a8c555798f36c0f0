"""Loading a cassette: a trace (`*.trace.jsonl`) or a vcrpy/pytest-recording YAML cassette.

A cassette that cannot be replayed (missing, corrupt, truncated, written by a newer version, no
checkpoint at `from_step`) raises `CassetteError` naming the file, the line and the fix. Nothing is
ever read from the network instead.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from ..errors import CassetteError, NewerTraceVersion, TraceFormatError
from ..trace.events import Event, json_type
from ..trace.reader import TornTraceWarning, TraceReader
from .cassette import CORRUPT_FIX, Cassette, Interaction, ToolRecord
from .names import YAML_SUFFIXES
from .vcr_yaml import load_vcr_yaml

UPGRADE_FIX = (
    "pip install -U pytest-agentevals; or re-record the cassette with this version "
    "(pytest --agentevals-record=all, or agentevals record)"
)
TRUNCATED_FIX = (
    "the recording was cut off: re-record it, or run `agentevals promote` on it, which keeps every "
    "complete event and closes the run"
)


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
        if from_step is not None:
            raise CassetteError(
                path, 0, "a vcrpy YAML cassette has no steps or checkpoints", "drop from_step, or use a trace"
            )
        return load_vcr_yaml(path)
    cassette = _load_trace(path)
    return cassette if from_step is None else _from_step(cassette, from_step)


def _load_trace(path: Path) -> Cassette:
    reader = TraceReader(path, workspaces=False)  # a replay boots from a checkpoint's state only
    events: list[Event] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornTraceWarning)
            events = list(reader)
    except NewerTraceVersion as exc:
        raise CassetteError(path, exc.line, exc.problem, UPGRADE_FIX) from None
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
    client_tools = 0
    for offset, event in enumerate(events):
        line = start_line + offset
        kind = event.get("type")
        if kind == "model_call":
            interactions.append(_interaction(path, line, len(interactions) + 1, event))
        elif kind == "tool_call" and event.get("by_client") is not True:
            # A tool the agent's own process ran (an imported run's: no @tool recorded it) is not
            # served: its result reaches the model in the next request, and is matched there.
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
        elif kind == "tool_call":
            client_tools += 1
        elif kind == "checkpoint":
            checkpoints.append({**event, "line": line})
        elif kind == "run_end":
            run_end = event
    return Cassette(
        path=path,
        kind="trace",
        interactions=interactions,
        # A run whose tools only its client ran (an import's) has no @tool calls to serve: its tools
        # run for real in a replay, as a YAML cassette's do, and their results are matched instead.
        tools=None if client_tools and not tools else tools,
        run_start=run_start,
        run_end=run_end,
        checkpoints=checkpoints,
    )


def _interaction(path: Path, line: int, number: int, event: Event) -> Interaction:
    request, response = event.get("request"), event.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise CassetteError(path, line, "model_call needs a request and a response object", CORRUPT_FIX)
    for where, value, expected, what in (
        ("request.method", request.get("method"), (str,), "a string"),
        ("request.url", request.get("url"), (str,), "a string"),
        ("request.headers", request.get("headers") or {}, (dict,), "an object"),
        ("response.headers", response.get("headers") or {}, (dict,), "an object"),
        ("response.sse", response.get("sse", []), (list,), "a list"),
        ("response.base64", response.get("base64", ""), (str,), "a string"),
    ):
        if not isinstance(value, expected):
            raise CassetteError(
                path, line, f"model_call.{where} must be {what}, found {json_type(value)}", CORRUPT_FIX
            )
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
