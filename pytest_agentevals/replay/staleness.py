"""Is a cassette stale? Its environment contract against the current one, before anything replays.

Two checks: package versions (the `contract_packages` setting) when the replay starts, and model
id, system prompt and tool schemas when the first model request arrives — the harness says what
they are by sending them. A difference raises `StaleCassette` listing every difference and the
command that re-records the cassette, instead of a confusing divergence at step 37.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..contract import hash_json, package_versions
from ..errors import StaleCassette


def package_differences(recorded: Mapping[str, Any], packages: Iterable[str]) -> list[str]:
    """Packages whose installed version differs from the one the recording's contract names."""
    recorded_versions = recorded.get("packages")
    if not isinstance(recorded_versions, Mapping):
        return []
    names = [name for name in packages if name in recorded_versions]
    current = package_versions(names)
    return [
        f"package {name}: recorded with {recorded_versions[name] or 'not installed'}, "
        f"now {current[name] or 'not installed'}"
        for name in names
        if recorded_versions[name] != current[name]
    ]


def request_contract_differences(
    recorded: Mapping[str, Any], now: Mapping[str, Any], fields: Iterable[str] = ("model", "system", "tools")
) -> list[str]:
    """What a model request says about the environment (model id, system prompt, tool schemas)
    that differs from the recorded request."""
    found: list[str] = []
    wanted = set(fields)
    if "model" in wanted and recorded.get("model") != now.get("model"):
        found.append(f"model: recorded {recorded.get('model')!r}, now {now.get('model')!r}")
    if "system" in wanted and hash_json(recorded.get("system")) != hash_json(now.get("system")):
        found.append(
            f"system prompt: sha256 {hash_json(recorded.get('system'))[:12]} recorded, "
            f"{hash_json(now.get('system'))[:12]} now"
        )
    if "tools" in wanted:
        found.extend(tool_differences(recorded.get("tools") or [], now.get("tools") or []))
    return found


def tool_differences(recorded: list[Any], now: list[Any]) -> list[str]:
    """Tool schemas added, removed or changed, by tool name."""
    if hash_json(recorded) == hash_json(now):
        return []
    old = {_name(tool, i): tool for i, tool in enumerate(recorded)}
    new = {_name(tool, i): tool for i, tool in enumerate(now)}
    found = [f"tool {name!r}: removed" for name in old if name not in new]
    found += [f"tool {name!r}: added" for name in new if name not in old]
    for name in old:
        if name in new and hash_json(old[name]) != hash_json(new[name]):
            fields = sorted(
                key
                for key in {*old[name], *new[name]}
                if hash_json(old[name].get(key)) != hash_json(new[name].get(key))
            )
            found.append(f"tool {name!r}: schema changed ({', '.join(fields)})")
    if not found:
        found.append("tools: the same schemas in another order")
    header = f"tool schemas: sha256 {hash_json(recorded)[:12]} recorded, {hash_json(now)[:12]} now"
    return [header, *found]


def _name(tool: Any, index: int) -> str:
    if isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
        return str(tool["name"])
    return f"#{index}"


def stale(path: Path, differences: list[str], rerecord: str | None) -> StaleCassette:
    how = rerecord or "re-record it (pytest --agentevals-record=all, or agentevals record)"
    lines = "\n".join(f"  - {line}" for line in differences)
    return StaleCassette(
        f"{path}: the cassette is stale: it was recorded against another environment:\n{lines}\n"
        f"Re-record it: {how}"
    )
