"""A declared tolerance of contract drift (`contract_tolerate`): the value type the settings parse
and `contract.py` applies to a replay's staleness and a resume's drift alike."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import ConfigError

# Version drift severities, mildest first: a tolerance of "minor" covers a patch drift too.
LEVELS = ("patch", "minor", "major")


@dataclass(frozen=True)
class Tolerance:
    """A declared tolerance of contract drift (`contract_tolerate`): a key pattern (a glob,
    `packages.*`), and the highest version severity it allows (None: any drift of the key)."""

    pattern: str
    level: str | None = None

    def covers(self, key: str, severity: str) -> bool:
        if not fnmatch.fnmatchcase(key, self.pattern):
            return False
        if self.level is None:
            return True
        return severity in LEVELS and LEVELS.index(severity) <= LEVELS.index(self.level)

    @classmethod
    def parse(cls, where: str, text: str) -> Tolerance:
        pattern, _, level = text.partition(":") if isinstance(text, str) else ("", "", "")
        if not pattern.strip() or (level and level not in LEVELS):
            raise ConfigError(
                where,
                f"{text!r} is not a tolerance",
                'write "KEY" (any drift of it; globs allowed: "packages.*") or "KEY:patch", "KEY:minor", '
                '"KEY:major" (a version drift up to that level)',
            )
        return cls(pattern.strip(), level or None)


def tolerances(where: str, entries: Iterable[str]) -> tuple[Tolerance, ...]:
    """Each entry parsed; ConfigError naming `where` and the entry otherwise."""
    return tuple(Tolerance.parse(where, entry) for entry in entries)
