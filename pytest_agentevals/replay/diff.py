"""Readable differences between a live request and the recording: which message, which field.

Used for strict replay's `ReplayDivergence`, sequential replay's report and tool-call divergences.
Values are shown short: a long string is cut to a window around its first difference, a multi-line
one is shown as a unified diff of the lines that changed.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..trace.delta import common_prefix
from .cassette import Interaction

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "(absent)"})()
MAX_DIFFERENCES = 5
MAX_VALUE = 160
CANDIDATE_WINDOW = 200


@dataclass(frozen=True)
class Difference:
    path: str
    recorded: Any
    now: Any


def differences(recorded: Any, now: Any, path: str = "", limit: int = 50) -> list[Difference]:
    """Where two JSON values differ, outermost first, at most `limit` places."""
    found: list[Difference] = []
    _walk(recorded, now, path, found, limit)
    return found


def _walk(recorded: Any, now: Any, path: str, found: list[Difference], limit: int) -> None:
    if len(found) >= limit or recorded == now:
        return
    if isinstance(recorded, dict) and isinstance(now, dict):
        for key in [*recorded, *(k for k in now if k not in recorded)]:
            child = f"{path}.{key}" if path else str(key)
            _walk(recorded.get(key, MISSING), now.get(key, MISSING), child, found, limit)
        return
    if isinstance(recorded, list) and isinstance(now, list):
        shared = min(len(recorded), len(now))
        for i in range(shared):
            _walk(recorded[i], now[i], f"{path}[{i}]", found, limit)
        if len(recorded) != len(now) and len(found) < limit:
            if len(now) > len(recorded):
                found.append(
                    Difference(f"{path}[{shared}:]", MISSING, _Extra(now[shared:], "more in the request"))
                )
            else:
                found.append(
                    Difference(
                        f"{path}[{shared}:]", _Extra(recorded[shared:], "more in the recording"), MISSING
                    )
                )
        return
    found.append(Difference(path or "(whole value)", recorded, now))


class _Extra:
    """Items one list has beyond the other, shown as a count and the first of them."""

    def __init__(self, items: list[Any], what: str) -> None:
        self.items = items
        self.what = what

    def __repr__(self) -> str:
        return f"{len(self.items)} {self.what}, first: {short(self.items[0])}"


def short(value: Any, limit: int = MAX_VALUE) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _show(value: Any) -> str:
    if value is MISSING or isinstance(value, _Extra):
        return repr(value)
    return short(value)


def render_difference(difference: Difference) -> list[str]:
    return [
        f"  {difference.path}:",
        *("    " + line for line in value_diff(difference.recorded, difference.now)),
    ]


def value_diff(recorded: Any, now: Any) -> list[str]:
    """How two values differ, as lines under their place: a text diff for multi-line text, else the
    two values, cut to a window around their first difference."""
    if isinstance(recorded, str) and isinstance(now, str):
        if "\n" in recorded or "\n" in now:
            return text_diff(recorded, now)
        start = _first_difference(recorded, now)
        if start > 40:
            recorded, now = "…" + recorded[start - 30 :], "…" + now[start - 30 :]
    return [f"recorded: {_show(recorded)}", f"now:      {_show(now)}"]


def text_diff(recorded: str, now: str, limit: int = 14) -> list[str]:
    """Two texts' difference as lines to show: a unified diff of the lines that changed (at most
    `limit`), or, where the lines are the same, which line ending differs: never nothing."""
    if recorded == now:
        return []
    if recorded.splitlines() != now.splitlines():
        diff = list(
            difflib.unified_diff(recorded.splitlines(), now.splitlines(), "recorded", "now", lineterm="", n=1)
        )
        if len(diff) > limit:
            diff = [*diff[:limit], f"… {len(diff) - limit} more diff lines"]
        return diff
    if recorded.rstrip("\r\n") == now.rstrip("\r\n"):
        return [
            f"the same text but for its end: recorded ends with {_ending(recorded)}, now with {_ending(now)}"
        ]
    return [f"the same lines but for their line endings: recorded {short(recorded)}, now {short(now)}"]


def _ending(text: str) -> str:
    tail = text[len(text.rstrip("\r\n")) :]
    return f"{tail!r}" if tail else "no newline"


def _first_difference(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def render_differences(found: Sequence[Difference], limit: int = MAX_DIFFERENCES) -> str:
    lines: list[str] = []
    for difference in found[:limit]:
        lines.extend(render_difference(difference))
    if len(found) > limit:
        lines.append(f"  … and {len(found) - limit} more difference(s)")
    return "\n".join(lines)


def request_differences(recorded: dict[str, Any], now: dict[str, Any]) -> list[Difference]:
    """Differences between two canonical requests, with body fields named as in the API
    (`messages[3].content[0].text`, `tools[1].input_schema`, `max_tokens`)."""
    found: list[Difference] = []
    for part in ("method", "path"):
        if recorded.get(part) != now.get(part):
            found.append(Difference(part, recorded.get(part), now.get(part)))
    found.extend(differences(recorded.get("body"), now.get("body")))
    return found


def where(found: Sequence[Difference], body: Any) -> str:
    """A one-line locator of the first difference: 'messages[74] (user), field content[0].content'."""
    if not found:
        return "no difference"
    path = found[0].path
    if path.startswith("messages[") and isinstance(body, dict):
        index_text = path[len("messages[") :].split("]", 1)[0].rstrip(":")
        rest = path.split("]", 1)[1].lstrip(".") if "]" in path else ""
        if index_text.isdigit():
            index = int(index_text)
            messages = body.get("messages") or []
            role = (
                messages[index].get("role")
                if index < len(messages) and isinstance(messages[index], dict)
                else None
            )
            message = f"message {index}" + (f" ({role})" if role else "")
            return message + (f", field {rest}" if rest else "")
    return f"field {path}"


def nearest(
    recorded: Sequence[Interaction], canonical: dict[str, Any], around: int = 0, count: int = 3
) -> list[tuple[Interaction, str]]:
    """The recorded exchanges closest to a live request, each with what is the same and what is not.

    Ranks by route and model, then by how many leading messages are equal, then by message count.
    Looks at most `CANDIDATE_WINDOW` recorded exchanges around position `around`.
    """
    start = max(0, around - CANDIDATE_WINDOW // 2)
    window = recorded[start : start + CANDIDATE_WINDOW]
    body = canonical.get("body")
    messages = body.get("messages") if isinstance(body, dict) else None
    scored: list[tuple[tuple[int, int, int, int], int, Interaction]] = []
    for position, interaction in enumerate(window):
        other = interaction.canonical
        other_body = other.get("body")
        same_route = int(
            other.get("path") == canonical.get("path") and other.get("method") == canonical.get("method")
        )
        same_model = int(
            isinstance(other_body, dict)
            and isinstance(body, dict)
            and other_body.get("model") == body.get("model")
        )
        prefix, gap = 0, 0
        other_messages = other_body.get("messages") if isinstance(other_body, dict) else None
        if isinstance(messages, list) and isinstance(other_messages, list):
            prefix = common_prefix(other_messages, messages)
            gap = abs(len(other_messages) - len(messages))
        scored.append(((same_route, same_model, prefix, -gap), -position, interaction))
    scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
    out: list[tuple[Interaction, str]] = []
    for _, _, interaction in scored[:count]:
        found = request_differences(interaction.canonical, canonical)
        other_body = interaction.canonical.get("body")
        other_messages = other_body.get("messages") if isinstance(other_body, dict) else None
        if isinstance(messages, list) and isinstance(other_messages, list):
            prefix = common_prefix(other_messages, messages)
            same = f"same first {prefix} of {len(other_messages)} recorded messages; "
        else:
            same = ""
        out.append((interaction, f"{same}differs at {where(found, interaction.canonical.get('body'))}"))
    return out
