"""Declared normalization: volatile request content folded by named rules before a replay compares a
live request with the recording, and every fold counted for the report.

Nothing is folded unless a rule says so: SDK traffic with no rule (the default) is compared as it
always was. A rule comes from a client's profile (profiles.py: the Claude Code CLI's) or from the
user's `replay_normalize` setting; both sides of a comparison, the recorded request and the live one,
are folded alike, and `Folds` keeps, per rule, where it folded, how often, and how often the live
value was not the recorded one (the folds that made a match).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..settings.normalize import Rule

Path = tuple[str, ...]
# An "everywhere" text shorter than this is not chased through the request: folding "/" or "a"
# everywhere would rewrite what the rule never meant.
MIN_EVERYWHERE = 4
MAX_PLACES = 5  # places kept per rule for the report (the count covers all of them)


@dataclass(frozen=True)
class Folded:
    """One fold: which rule, at which JSON pointer, and the text it replaced."""

    rule: str
    pointer: str
    text: str


def _pointer(path: Path) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in path)


def _parse_place(place: str) -> Path | str:
    """A JSON pointer as its segments, or a bare field name as itself."""
    if place == "":
        return ()
    if not place.startswith("/"):
        return place
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in place[1:].split("/"))


class Normalizer:
    """Rules applied in order to a request body. `label` names them for the report (a profile's name
    and version, or the settings' key)."""

    def __init__(self, rules: Sequence[Rule], label: str) -> None:
        self.rules = tuple(rules)
        self.label = label
        self._places = [[_parse_place(place) for place in rule.where] for rule in self.rules]

    def __bool__(self) -> bool:
        return bool(self.rules)

    def fold(self, body: Any) -> tuple[Any, list[Folded]]:
        """The body with every rule's text folded to its placeholder, and what was folded where."""
        folded: list[Folded] = []
        for rule, places in zip(self.rules, self._places, strict=True):
            texts: list[str] = []
            body = _map(
                body,
                (),
                lambda path, text, r=rule, p=places, t=texts: _fold_at(r, p, path, text, folded, t),
            )
            if rule.everywhere:
                chase = sorted({t for t in texts if len(t) >= MIN_EVERYWHERE}, key=len, reverse=True)
                if chase:
                    body = _map(
                        body, (), lambda path, text, r=rule, c=chase: _fold_texts(r, c, path, text, folded)
                    )
        return body, folded


def _matches(places: Iterable[Path | str], path: Path) -> bool:
    for place in places:
        if isinstance(place, str):
            if path and path[-1] == place:
                return True
        elif place == () or (
            len(place) == len(path) and all(p == "*" or p == q for p, q in zip(place, path, strict=True))
        ):
            return True
    return False


def _fold_at(
    rule: Rule, places: list[Path | str], path: Path, text: str, out: list[Folded], texts: list[str]
) -> str:
    if not _matches(places, path):
        return text
    pieces: list[str] = []
    last = 0
    for match in rule.compiled.finditer(text):
        group = 1 if rule.compiled.groups else 0
        start, end = match.span(group)
        if start < 0 or start == end:
            continue
        pieces.append(text[last:start])
        pieces.append(rule.placeholder)
        out.append(Folded(rule.name, _pointer(path), text[start:end]))
        texts.append(text[start:end])
        last = end
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _fold_texts(rule: Rule, chase: list[str], path: Path, text: str, out: list[Folded]) -> str:
    for target in chase:
        if target in text:
            count = text.count(target)
            text = text.replace(target, rule.placeholder)
            out.extend(Folded(rule.name, _pointer(path), target) for _ in range(count))
    return text


def _map(value: Any, path: Path, fn: Any) -> Any:
    """`value` with every string leaf replaced by fn(path, leaf); containers copied only when changed."""
    if isinstance(value, str):
        return fn(path, value)
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new = _map(item, (*path, str(key)), fn)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value
    if isinstance(value, list):
        items = [_map(item, (*path, str(i)), fn) for i, item in enumerate(value)]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


@dataclass
class RuleFolds:
    """What one rule folded over a replay: how many texts, in how many requests, at which places, and
    in how many requests the live texts were not the recorded ones."""

    rule: Rule
    texts: int = 0
    requests: int = 0
    differed: int = 0
    places: list[str] = field(default_factory=list)

    def line(self) -> str:
        why = f" — {self.rule.why}" if self.rule.why else ""
        head = f"  {self.rule.name} ({self.rule.source}): "
        if not self.texts:
            return f"{head}folded nothing{why}"
        where = ", ".join(self.places) + (" …" if len(self.places) >= MAX_PLACES else "")
        differed = f"{self.differed} differed from the recording" if self.differed else "none differed"
        return f"{head}{self.texts} text(s) in {self.requests} request(s); {differed}; at {where}{why}"


class Folds:
    """Every fold a replay made, per rule, in rule order (each listed even when it folded nothing)."""

    def __init__(self, normalizer: Normalizer) -> None:
        self.label = normalizer.label
        self.by_rule = {rule.name: RuleFolds(rule) for rule in normalizer.rules}

    def add(self, live: Sequence[Folded], recorded: Sequence[Folded]) -> None:
        """The folds of one live request, and those of the recorded request it was matched with."""
        for name, entry in self.by_rule.items():
            mine = [f for f in live if f.rule == name]
            if not mine:
                continue
            entry.texts += len(mine)
            entry.requests += 1
            theirs = [f.text for f in recorded if f.rule == name]
            if [f.text for f in mine] != theirs:
                entry.differed += 1
            for fold in mine:
                if fold.pointer not in entry.places and len(entry.places) < MAX_PLACES:
                    entry.places.append(fold.pointer)

    @property
    def total(self) -> int:
        return sum(entry.texts for entry in self.by_rule.values())

    def summary(self) -> str:
        return f"normalized by {self.label}: {self.total} text(s) folded by {len(self.by_rule)} rule(s)"

    def lines(self) -> list[str]:
        return [self.summary() + ":"] + [entry.line() for entry in self.by_rule.values()]
