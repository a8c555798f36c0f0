"""The report's own secret check: the scrubber's detector run over everything the report would write.

Traces are scrubbed when they are recorded, so a report built from them holds no secret — unless a
trace was recorded without the scrubber, edited since, or holds a secret the environment now knows
(a `*_API_KEY` variable's value). Then the report is refused, naming the place, and nothing is
written: a page is meant to be shared (a CI artifact, a PR comment), which a trace seldom is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import ReportError
from ..trace.scrub import Finding, Scrubber


@dataclass(frozen=True)
class Placed:
    """A text the report would write and the place it would be, for a person."""

    place: str
    text: str
    data: Any = None  # the data a text was serialized from, walked to name the place more closely
    packed: str = ""  # what the text holds compressed: checked as the reader will see it


class Detector:
    """The trace writer's scrubber used as a detector: key shapes, bearer tokens and the current
    environment's secret values (`*_API_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`), each in every
    form the scrubber knows."""

    def __init__(self) -> None:
        self._scrubber = Scrubber()

    def find(self, text: str) -> Finding | None:
        """The first secret-shaped string in `text`, if any."""
        found = self._scrubber.find(text)
        return found[0] if found else None

    def secrets(self) -> object:
        """The secrets it finds now, as a token: the same object while they stay the same (the
        environment's secret values change it)."""
        return self._scrubber.memo()


class Checked:
    """The secret check for texts that come back: the live console serves a run's section again at
    every update, most of it as it was. `check` searches every text it did not find clean at its
    last call; one found clean then, the same text again, is not searched again — while the secrets
    are the same ones (a new `*_API_KEY` value in the environment: every text is searched again)."""

    def __init__(self) -> None:
        self._detector = Detector()
        self._clean: set[tuple[str, str]] = set()
        self._secrets: object = None

    def check(self, parts: Iterable[Placed], what: str) -> None:
        """As `check(parts, what)`; afterwards the texts of `parts` are the ones known clean."""
        now = self._detector.secrets()
        known = self._clean if now is self._secrets else set()
        clean: set[tuple[str, str]] = set()
        new: list[Placed] = []
        for part in parts:
            key = (part.text, part.packed)
            if key in known:
                clean.add(key)
            else:
                new.append(part)
        check(new, what, self._detector)
        clean.update((part.text, part.packed) for part in new)
        self._clean, self._secrets = clean, now


def check(parts: Iterable[Placed], what: str, detector: Detector | None = None) -> None:
    """Raise `ReportError` naming the first place where a part holds something secret-shaped."""
    detector = detector or Detector()
    for part in parts:
        hit, text = detector.find(part.text), part.text
        if hit is None and part.packed:
            hit, text = detector.find(part.packed), part.packed
        if hit is None:
            continue
        place = part.place
        if part.data is not None:
            inner = _locate(detector, part.data)
            if inner is not None:
                place += f", at {inner}"
        start, end, kind = hit
        raise ReportError(
            f"refused to write {what}: {place} would hold {kind} ({mask(text[start:end])}). "
            "Traces are scrubbed when they are recorded, so this trace was recorded without the "
            "scrubber or edited since: find the string with `agentevals scan TRACE`, remove it from the "
            "trace, and build the report again"
        )


def mask(value: str) -> str:
    """A secret as a refusal names it: its length only, never a character of it."""
    return f"{len(value)} characters"


def _locate(detector: Detector, data: Any) -> str | None:
    for path, text in _strings(data, ""):
        if detector.find(text) is not None:
            return path
    return None


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path or "(the top)", value
    elif isinstance(value, dict):
        for key, item in value.items():
            key_text = str(key)
            yield (path or "(the top)") + " (a key)", key_text
            inner = f"{path}.{key_text}" if _NAME.fullmatch(key_text) else f"{path}[{key_text!r}]"
            yield from _strings(item, inner.lstrip("."))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")
