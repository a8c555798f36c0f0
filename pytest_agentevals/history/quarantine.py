"""The checked-in quarantine file: tests that still run and are recorded but do not fail the session.

```yaml
quarantine:
  - test: tests/test_agent.py::test_deploy_marathon   # a node id; without [params] it covers them all
    owner: alice@example.com
    reason: sandbox DNS flaps under load (INFRA-123)
    expires: 2026-03-31                                # valid through this day, a breach after it
```

Every field is required: a quarantine nobody owns, or that never ends, is how a suite rots. An
expired entry no longer protects its test and is a budget breach until it is renewed or removed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..errors import ConfigError
from ..trace.loaders import excerpt

REASON_PREFIX: Final = "agentevals quarantine"
FIELDS: Final = ("test", "owner", "reason", "expires")
_EXAMPLE = "write entries as: quarantine: [{test: NODEID, owner: WHO, reason: WHY, expires: YYYY-MM-DD}]"


@dataclass(frozen=True)
class Entry:
    test: str
    owner: str
    reason: str
    expires: dt.date

    def matches(self, nodeid: str) -> bool:
        if nodeid == self.test:
            return True
        return "[" not in self.test and nodeid.startswith(self.test + "[")

    def expired(self, today: dt.date) -> bool:
        return today > self.expires

    def describe(self) -> str:
        return f"{self.test} (owner {self.owner}, expires {self.expires.isoformat()}: {self.reason})"


@dataclass(frozen=True)
class Quarantine:
    path: Path
    entries: tuple[Entry, ...] = ()

    def entry_for(self, nodeid: str) -> Entry | None:
        """The entry covering a test, expired or not."""
        for entry in self.entries:
            if entry.matches(nodeid):
                return entry
        return None

    def protects(self, nodeid: str, today: dt.date) -> Entry | None:
        """The unexpired entry covering a test, if any."""
        entry = self.entry_for(nodeid)
        return entry if entry is not None and not entry.expired(today) else None

    def expired(self, today: dt.date) -> list[Entry]:
        return [entry for entry in self.entries if entry.expired(today)]


def _date(where: str, raw: Any) -> dt.date:
    if isinstance(raw, dt.datetime):
        return raw.date()
    if isinstance(raw, dt.date):
        return raw
    if isinstance(raw, str):
        try:
            return dt.date.fromisoformat(raw.strip())
        except ValueError:
            pass
    raise ConfigError(f"{where} expires", f"{excerpt(str(raw))} is not a date", "write it as YYYY-MM-DD")


# How far ahead a quarantine may end: a year and a day. One that ends in 9999 never ends, and a
# quarantine that never ends is a test deleted without a word (docs/history.md).
MAX_HORIZON_DAYS = 366


def _entry(where: str, raw: Any, today: dt.date) -> Entry:
    if not isinstance(raw, dict):
        raise ConfigError(where, f"{excerpt(str(raw))} is not a mapping", _EXAMPLE)
    unknown = sorted(set(map(str, raw)) - set(FIELDS))
    if unknown:
        raise ConfigError(f"{where} {unknown[0]}", "unknown field", "use: " + ", ".join(FIELDS))
    for name in ("test", "owner", "reason"):
        value = raw.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where} {name}", "is missing or empty", f"give the {name} as text")
    if "expires" not in raw:
        raise ConfigError(f"{where} expires", "is missing", "give the date the quarantine ends, YYYY-MM-DD")
    expires = _date(where, raw["expires"])
    if (expires - today).days > MAX_HORIZON_DAYS:
        raise ConfigError(
            f"{where} expires",
            f"{expires.isoformat()} is more than {MAX_HORIZON_DAYS} days away",
            f"give a date by {(today + dt.timedelta(days=MAX_HORIZON_DAYS)).isoformat()}, and renew it then "
            "if the test still flaps",
        )
    return Entry(raw["test"].strip(), raw["owner"].strip(), raw["reason"].strip(), expires)


def parse(path: Path, data: Any, today: dt.date | None = None) -> Quarantine:
    """A quarantine from the loaded YAML of `path` (a `quarantine:` list, or a bare list); an entry
    may end at most MAX_HORIZON_DAYS after `today` (default: the local date)."""
    today = dt.date.today() if today is None else today
    if data is None:
        return Quarantine(path)
    if isinstance(data, dict):
        unknown = sorted(set(map(str, data)) - {"quarantine"})
        if unknown:
            raise ConfigError(f"{path}: {unknown[0]}", "unknown key", "the file has one key, quarantine")
        data = data.get("quarantine") or []
    if not isinstance(data, list):
        raise ConfigError(str(path), "is not a list of entries", _EXAMPLE)
    entries: list[Entry] = []
    for index, raw in enumerate(data, start=1):
        label = raw.get("test") if isinstance(raw, dict) else None
        where = f"{path}: entry {index}" + (f" ({label})" if isinstance(label, str) else "")
        entries.append(_entry(where, raw, today))
    return Quarantine(path, tuple(entries))


def load(path: Path, today: dt.date | None = None) -> Quarantine:
    """The quarantine in `path`; an empty one when the file does not exist. (`today`: as `parse`.)"""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Quarantine(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            str(path), f"cannot be read ({exc})", "fix the file or set --agentevals-quarantine"
        ) from None
    # Only a session with a quarantine file needs the YAML parser; the bounded loader refuses alias
    # bombs, unsafe tags and bad dates before anything is built.
    from ..trace.yaml_loader import fix_for, load_yaml

    def fail(line: int, problem: str) -> ConfigError:
        where = f"{path}:{line}" if line else str(path)
        return ConfigError(where, problem, fix_for(problem, "fix the file at that line"))

    return parse(path, load_yaml(text, fail), today)


# What the docs and a user may import from here; the rest is this module's own.
__all__ = [
    "MAX_HORIZON_DAYS",
    "REASON_PREFIX",
    "Entry",
    "Quarantine",
    "load",
    "parse",
]
