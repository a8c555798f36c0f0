"""Reading a goldens file: one scenario, many step cases, every problem reported with its file, line,
case and key.

    scenario: refactor                     # optional; the file's name by default
    defaults:                              # optional; fills keys a case's context leaves out
      request: {model: claude-sonnet-4-5, system: "...", tools: [...]}
    cases:
      - id: step-12-tool-choice
        kind: tool_choice                  # tool_choice | trajectory | compaction | escalation
        source: {trace: runs/refactor.trace.jsonl, step: 12}
        context:
          request: {messages: [...]}       # or state: {...} for a harness decision
        expect: {tool: read_file, args: {path: src/parser.py}}
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import GoldenError, LinkRefused
from ..fileio import open_nofollow
from .case import StepCase
from .kinds import KIND_NAMES, parse_expectation
from .yamlio import key_path, line_of, load_yaml

TOP_KEYS = ("scenario", "description", "source", "defaults", "cases")
CASE_KEYS = ("id", "kind", "description", "source", "context", "expect", "xfail")
CONTEXT_DEFAULTS = ("request", "state")
_BAD_ID = re.compile(r"::|\s")


@dataclass(frozen=True)
class GoldensFile:
    path: Path
    scenario: str
    cases: tuple[StepCase, ...]
    description: str | None = None

    def case(self, case_id: str) -> StepCase:
        for case in self.cases:
            if case.id == case_id:
                return case
        known = ", ".join(case.id for case in self.cases) or "none"
        raise GoldenError(f"{self.path}::{case_id}", "no such case", f"cases in this file: {known}")


def display_path(path: Path, rootdir: Path) -> str:
    """How errors name a file of the session: relative to its rootdir when it is inside."""
    try:
        return str(path.relative_to(rootdir))
    except ValueError:
        return str(path)


def load_goldens(path: str | Path, display: str | None = None, root: Path | None = None) -> GoldensFile:
    """Read and check a goldens file. `display` is how errors name it (default: the path as given).

    Never through a link: a goldens file that is one, or a folder between `root` (default: the working
    directory) and it that is one, could point anywhere on the machine (`fileio.refuse_links`).
    """
    path = Path(path)
    display = display or str(path)
    try:
        descriptor = open_nofollow(path, os.O_RDONLY, root=root)
        with open(descriptor, encoding="utf-8") as file:
            text = file.read()
    except LinkRefused as exc:
        raise GoldenError(
            display,
            f"is a symbolic link, or inside one ({exc.link} -> {os.readlink(exc.link)}), and a goldens "
            "file is never read through one",
            "replace the link with the goldens file or folder it stands for, or delete it",
        ) from None
    except OSError as exc:
        raise GoldenError(display, f"cannot be read: {exc.strerror}", "check the path") from None
    except UnicodeDecodeError:
        raise GoldenError(display, "is not UTF-8 text", "save it as UTF-8") from None
    return parse_goldens(text, path, display)


def load_case(path: str | Path, case_id: str) -> StepCase:
    """One case of a goldens file, e.g. for a metamorphic test of it."""
    return load_goldens(path).case(case_id)


def parse_goldens(text: str, path: Path, display: str) -> GoldensFile:
    data = load_yaml(text, display)
    example = "scenario: x\ncases:\n  - {id: step-1, kind: tool_choice, context: {...}, expect: {...}}"
    if not isinstance(data, Mapping) or "cases" not in data:
        raise GoldenError(
            display, "is not a goldens file: it has no top-level `cases:` list", f"write {example}"
        )
    unknown = [key for key in data if key not in TOP_KEYS]
    if unknown:
        raise GoldenError(
            _where(text, display, [unknown[0]]), f"unknown key {unknown[0]!r}", "use: " + ", ".join(TOP_KEYS)
        )
    raw_cases = data["cases"]
    if not isinstance(raw_cases, list):
        raise GoldenError(_where(text, display, ["cases"]), "`cases` is not a list", f"write {example}")
    defaults = _defaults(data.get("defaults"), text, display)
    problems: list[GoldenError] = []
    cases: list[StepCase] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_cases):
        try:
            case = _case(raw, index, path, defaults)
            if case.id in seen:
                raise GoldenError(
                    "id",
                    f"case id {case.id!r} is used twice (cases #{seen[case.id] + 1} and #{index + 1})",
                    "give each case its own id",
                )
            seen[case.id] = index
            cases.append(case)
        except GoldenError as exc:
            problems.append(_located(exc, text, display, index, raw))
    if len(problems) == 1:
        raise problems[0]
    if problems:
        listed = "\n  ".join(str(problem) for problem in problems)
        raise GoldenError(display, f"has {len(problems)} bad cases:\n  {listed}", "fix each one as it says")
    scenario = data.get("scenario", path.stem)
    description = data.get("description")
    return GoldensFile(
        path, str(scenario), tuple(cases), description if isinstance(description, str) else None
    )


def _defaults(raw: Any, text: str, display: str) -> dict[str, dict[str, Any]]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or any(key not in CONTEXT_DEFAULTS for key in raw):
        raise GoldenError(
            _where(text, display, ["defaults"]),
            "`defaults` may hold only request: and state: mappings",
            "write defaults: {request: {system: ..., tools: [...]}}",
        )
    for key, value in raw.items():
        if not isinstance(value, Mapping):
            raise GoldenError(
                _where(text, display, ["defaults", key]),
                f"defaults.{key} is not a mapping",
                "write key: value pairs",
            )
    return {key: dict(value) for key, value in raw.items()}


def _case(raw: Any, index: int, path: Path, defaults: Mapping[str, Mapping[str, Any]]) -> StepCase:
    if not isinstance(raw, Mapping):
        raise GoldenError(
            "", f"case #{index + 1} is {type(raw).__name__}, not a mapping", "write - id: ..., kind: ..."
        )
    unknown = [key for key in raw if key not in CASE_KEYS]
    if unknown:
        raise GoldenError(str(unknown[0]), "unknown key", "use: " + ", ".join(CASE_KEYS))
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not case_id or _BAD_ID.search(case_id):
        raise GoldenError(
            "id",
            f"{case_id!r} is not a case id",
            "give a name without spaces or '::', e.g. step-12-tool-choice",
        )
    kind = raw.get("kind")
    if kind not in KIND_NAMES:
        raise GoldenError(
            "kind", f"{kind!r} is not a kind of step case", "use one of: " + ", ".join(KIND_NAMES)
        )
    context = raw.get("context", {})
    if not isinstance(context, Mapping):
        raise GoldenError(
            "context",
            f"is {type(context).__name__}, not a mapping",
            "write context: {request: {...}} or {state: {...}}",
        )
    for key in CONTEXT_DEFAULTS:
        if key in context and not isinstance(context[key], Mapping):
            raise GoldenError(
                f"context.{key}", f"is {type(context[key]).__name__}, not a mapping", f"write {key}: {{...}}"
            )
    merged = {
        key: ({**defaults[key], **value} if key in defaults and key in CONTEXT_DEFAULTS else value)
        for key, value in context.items()
    }
    if "expect" not in raw:
        raise GoldenError("expect", "is required", "say what the decision should be under expect:")
    expect = parse_expectation(str(kind), raw["expect"], "expect")
    source = raw.get("source")
    xfail = raw.get("xfail")
    if xfail is not None and not isinstance(xfail, str):
        raise GoldenError(
            "xfail", f"{xfail!r} is not a reason", 'write xfail: "why this case is expected to fail"'
        )
    return StepCase(
        id=case_id,
        kind=str(kind),
        context=merged,
        expect=expect,
        path=path,
        index=index,
        source=source if isinstance(source, Mapping) else None,
        description=raw.get("description"),
        xfail=xfail,
    )


def _where(text: str, display: str, path: list[str | int]) -> str:
    line = line_of(text, path)
    return f"{display}:{line}" if line else display


def _located(error: GoldenError, text: str, display: str, index: int, raw: Any) -> GoldenError:
    """The error with the file, the line, the case id and the key in front."""
    case_id = (
        raw.get("id") if isinstance(raw, Mapping) and isinstance(raw.get("id"), str) else f"#{index + 1}"
    )
    keys = key_path(error.where) if error.where else []
    line = line_of(text, ["cases", index, *keys])
    where = f"{display}:{line}::{case_id}" if line else f"{display}::{case_id}"
    if error.where:
        where += f" {error.where}"
    return GoldenError(where, error.problem, error.fix)
