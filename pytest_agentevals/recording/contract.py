"""The environment contract: what a recorded run assumed about the world it ran in."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import platform
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ..errors import ConfigError

# How far a version may drift under a tolerance, lowest first (`packages.anthropic:patch`).
LEVELS = ("patch", "minor", "major")


def hash_json(value: Any) -> str:
    """A stable hash of a JSON value (keys sorted), for prompts, tool schemas and fixtures."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def package_versions(packages: Iterable[str]) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in packages:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return versions


def environment_contract(
    packages: Iterable[str] = ("anthropic",), extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The contract known when a run starts. `extra` holds what the harness declares (fixture hashes,
    a model id...); what the traffic shows (model ids, prompt and tool hashes) is added at run_end."""
    contract: dict[str, Any] = {
        "python": platform.python_version(),
        "packages": package_versions(["pytest-agentevals", *packages]),
    }
    contract.update(extra or {})
    return contract


def observed_contract(request_body: Mapping[str, Any]) -> dict[str, Any]:
    """What a model request says about the run's contract: the model, and hashes of the system
    prompt and tool schemas."""
    return {
        "model": request_body.get("model"),
        "system_sha256": hash_json(request_body.get("system")),
        "tools_sha256": hash_json(request_body.get("tools", [])),
    }


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
