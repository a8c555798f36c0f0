"""Recorded `@tool` calls answered without running: the recorded output, or the recorded exception.

Strict replay wants each call, by name and input, to be one that was recorded (in order, or out of
order when calls run concurrently); sequential replay serves the next recorded call of the same
tool and reports a different input as a divergence.
"""

from __future__ import annotations

import builtins
import json
import sys
from dataclasses import dataclass
from typing import Any

from ..trace.jsonable import jsonable_default
from .cassette import ToolRecord


class RecordedToolError(Exception):
    """A recorded tool exception whose class cannot be rebuilt here (its module is not imported,
    or it does not take a message): same type name and message, raised in its place."""

    def __init__(self, type_name: str, message: str) -> None:
        self.type_name = type_name
        self.message = message
        super().__init__(f"{type_name}: {message}")


def jsonable(value: Any) -> Any:
    """A value as the trace writer stores it (tuples as lists, paths as strings...), for comparing a
    live tool input with a recorded one."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=jsonable_default))


def recorded_exception(error: dict[str, Any]) -> Exception:
    """The exception a tool raised when recorded. The class is looked up, never imported: a
    builtin, or a class of a module this process has already imported."""
    type_name = str(error.get("type") or "Exception")
    message = str(error.get("message") or "")
    cls = _resolve(type_name)
    if cls is not None:
        try:
            return cls(message)
        except Exception:  # a constructor that wants other arguments
            pass
    return RecordedToolError(type_name, message)


def _resolve(type_name: str) -> type[Exception] | None:
    if "." in type_name:
        module_name, _, qualname = type_name.rpartition(".")
        owner: Any = sys.modules.get(module_name)
        # A nested class: module.Outer.Inner, where the module is a prefix of the dotted name.
        while owner is None and "." in module_name:
            module_name, _, outer = module_name.rpartition(".")
            qualname = f"{outer}.{qualname}"
            owner = sys.modules.get(module_name)
        for part in qualname.split("."):
            owner = getattr(owner, part, None)
        candidate = owner
    else:
        candidate = getattr(builtins, type_name, None)
    if isinstance(candidate, type) and issubclass(candidate, Exception):
        return candidate
    return None


@dataclass(frozen=True)
class ToolMatch:
    """What a live tool call got: the record to answer with (None when there is none), the record
    replay expected (for the message), and whether the call diverged from the recording."""

    record: ToolRecord | None
    expected: ToolRecord | None
    divergent: bool


class ToolPlayer:
    """The recorded tool calls of one replay, taken as the run calls its tools."""

    def __init__(self, records: list[ToolRecord], mode: str) -> None:
        self.records = records
        self.mode = mode
        self._used = [False] * len(records)
        self._head = 0
        self.calls = 0

    def _scan(self, name: str | None = None, tool_input: Any = None, match_input: bool = False) -> int | None:
        while self._head < len(self.records) and self._used[self._head]:
            self._head += 1
        for i in range(self._head, len(self.records)):
            record = self.records[i]
            if self._used[i] or (name is not None and record.name != name):
                continue
            if match_input and record.input != tool_input:
                continue
            return i
        return None

    def take(self, name: str, tool_input: Any) -> ToolMatch:
        self.calls += 1
        first = self._scan()
        expected = self.records[first] if first is not None else None
        if self.mode == "sequential":
            index = self._scan(name)
        else:
            index = self._scan(name, tool_input, match_input=True)
        if index is None:
            return ToolMatch(None, expected, True)
        self._used[index] = True
        record = self.records[index]
        return ToolMatch(
            record, record if self.mode == "sequential" else expected, record.input != tool_input
        )

    def unused(self) -> list[ToolRecord]:
        return [record for i, record in enumerate(self.records) if not self._used[i]]
