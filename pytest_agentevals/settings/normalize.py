"""A declared normalization rule (`replay_normalize`): the value type the settings parse and the replay
engine applies (replay/normalize.py) when it matches a live request against the recording.

A rule names what it folds, where and by which pattern:

```toml
[[tool.agentevals.replay_normalize]]
name = "build-id"
where = "/system/*/text"          # JSON pointers ('*' is any one key or index), or a field name anywhere
pattern = "build ([0-9a-f]{7})"   # the first group when there is one, else the whole match
everywhere = false                # true: the folded text is folded in every string of the request too
```

On the command line a rule is `NAME@WHERE=PATTERN` (WHERE may be several, comma-separated).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from .stock import is_stock_reference, lookup

RULE_FORM = 'NAME@WHERE=PATTERN, e.g. "build-id@/system/*/text=build [0-9a-f]{7}"'
RULE_KEYS = ("name", "where", "pattern", "everywhere", "why")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_PATTERN = 1000


@dataclass(frozen=True)
class Rule:
    """Fold the text `pattern` matches (its first group, when it has one) in the strings found at
    `where`, for matching only: both the recording and the live request read `<name>` there.

    `where` holds JSON pointers (RFC 6901, `*` standing for any one key or index; "" for the whole
    request) or bare field names (that field at any depth). With `everywhere`, each text folded is
    also folded wherever else it appears in the request (a working directory named in one place and
    repeated in tool results). `source` says who declared it: a profile or the user's settings.
    """

    name: str
    where: tuple[str, ...]
    pattern: str
    everywhere: bool = False
    why: str = ""
    source: str = "[tool.agentevals] replay_normalize"
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", re.compile(self.pattern))

    @property
    def placeholder(self) -> str:
        return f"<{self.name}>"

    @classmethod
    def parse(cls, where: str, raw: Any) -> Rule:
        """One rule from its table (or its `NAME@WHERE=PATTERN` text); ConfigError naming `where`."""
        if isinstance(raw, str):
            raw = _from_text(where, raw)
        if not isinstance(raw, Mapping):
            raise ConfigError(
                where, f"{raw!r} is not a rule", f"write a table {{name, where, pattern}} or {RULE_FORM}"
            )
        unknown = sorted(set(raw) - set(RULE_KEYS))
        if unknown:
            raise ConfigError(f"{where}.{unknown[0]}", "unknown key", "use: " + ", ".join(RULE_KEYS))
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"{where}.name", f"{name!r} is not a rule name", "give letters, digits, '-', '_' or '.'"
            )
        at = f"{where} ({name})"
        places = raw.get("where", "")
        if isinstance(places, str):
            places = [places]
        if not isinstance(places, Sequence) or not all(isinstance(p, str) for p in places) or not places:
            raise ConfigError(
                f"{at}.where",
                f"{places!r} is not a place",
                'give a JSON pointer ("/system/*/text") or a field name',
            )
        for place in places:
            if place and not place.startswith("/") and "/" in place:
                raise ConfigError(
                    f"{at}.where",
                    f"{place!r} is neither a JSON pointer nor a field name",
                    "start a pointer with /",
                )
        pattern = raw.get("pattern")
        if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN:
            raise ConfigError(f"{at}.pattern", f"{pattern!r} is not a pattern", "give a regular expression")
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ConfigError(
                f"{at}.pattern", f"{pattern!r} is not a regular expression ({exc})", "fix it"
            ) from exc
        if compiled.fullmatch(""):
            raise ConfigError(
                f"{at}.pattern", f"{pattern!r} matches the empty text", "make it match something, e.g. [0-9]+"
            )
        everywhere = raw.get("everywhere", False)
        why = raw.get("why", "")
        if not isinstance(everywhere, bool):
            raise ConfigError(f"{at}.everywhere", f"{everywhere!r} is not a boolean", "use true or false")
        if not isinstance(why, str):
            raise ConfigError(f"{at}.why", f"{why!r} is not a string", "say why the value changes")
        return cls(name, tuple(places), pattern, everywhere, why)


def _from_text(where: str, text: str) -> dict[str, Any]:
    name, at, rest = text.partition("@")
    places, equals, pattern = rest.partition("=")
    if not at or not equals or not name.strip():
        raise ConfigError(where, f"{text!r} is not a rule", f"write {RULE_FORM}")
    return {
        "name": name.strip(),
        "where": [p.strip() for p in places.split(",") if p.strip()] or [""],
        "pattern": pattern,
    }


def rules(where: str, raw: Any) -> tuple[Rule, ...]:
    """A list of rules (tables or texts); ConfigError naming `where`, the rule and the key otherwise.
    Two rules of one name would make the report ambiguous: refused."""
    if isinstance(raw, str | Mapping):
        raw = [raw]
    if not isinstance(raw, Sequence):
        raise ConfigError(
            where, f"{raw!r} is not a list of rules", "write [[tool.agentevals.replay_normalize]] tables"
        )
    parsed: list[Rule] = []
    for i, entry in enumerate(raw):
        if is_stock_reference(entry):
            name, version, folds = lookup(f"{where}[{i}]", entry, f"write {RULE_FORM}")
            for suffix, pattern, why in folds:
                rule = f"{name}.{suffix}" if suffix else name
                parsed.append(Rule(rule, ("",), pattern, why=why, source=f"stock rule {name} v{version}"))
        else:
            parsed.append(Rule.parse(f"{where}[{i}]", entry))
    names = [rule.name for rule in parsed]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(where, f"two rules are named {name!r}", "give each rule its own name")
    return tuple(parsed)
