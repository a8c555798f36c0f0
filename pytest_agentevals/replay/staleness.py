"""Is a cassette stale? Its environment contract against the current one, before anything replays.

Two checks, both the drift comparison of `contract.py` with the run's declared tolerances
(`contract_tolerate`, as a resume applies them): package versions (the `contract_packages`
setting) when the replay starts, and model id, system prompt and tool schemas (`model`,
`system_sha256`, `tools.NAME`) when the first model request arrives — the harness says what they
are by sending them. A drift no tolerance covers raises `StaleCassette` listing every such
difference and the command that re-records the cassette, instead of a confusing divergence at step
37; a tolerated one goes into the replay's report (`Staleness.tolerated`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract import Drift, Tolerance, compare, compare_request, current, hash_json, request_contract
from ..errors import StaleCassette
from .diff import value_diff


def _field(key: str) -> str | None:
    """Which field of the first-request check (`model`, `system`, `tools`) a request key is."""
    if key == "model":
        return "model"
    if key == "system_sha256":
        return "system"
    return "tools" if key.startswith("tools.") else None


@dataclass(frozen=True)
class Staleness:
    """A check's outcome: `differences`, what no tolerance covers (each a line of the StaleCassette
    message), and `tolerated`, the drifts a declared tolerance let through."""

    differences: list[str] = field(default_factory=list)
    tolerated: list[Drift] = field(default_factory=list)


def check_packages(
    recorded: Mapping[str, Any], names: Iterable[str], tolerate: Sequence[Tolerance] = ()
) -> Staleness:
    """Packages whose installed version differs from the one the recording's contract names."""
    recorded_versions = recorded.get("packages")
    if not isinstance(recorded_versions, Mapping):
        return Staleness()
    keys = {f"packages.{name}": recorded_versions[name] for name in names if name in recorded_versions}
    order = list(keys)  # the contract_packages order, as the message has always listed them
    drifts = sorted(compare(keys, current(keys), tolerate), key=lambda drift: order.index(drift.key))
    lines = [
        f"package {drift.key.removeprefix('packages.')}: recorded with "
        f"{drift.recorded or 'not installed'}, now {drift.now or 'not installed'}"
        for drift in drifts
        if not drift.tolerated
    ]
    return Staleness(lines, [drift for drift in drifts if drift.tolerated])


def check_request(
    recorded: Mapping[str, Any],
    now: Mapping[str, Any],
    fields: Iterable[str] = ("model", "system", "tools"),
    tolerate: Sequence[Tolerance] = (),
) -> Staleness:
    """What a model request says about the environment (model id, system prompt, tool schemas)
    that differs from the recorded request."""
    wanted = set(fields)
    drifts = compare_request(_keys(recorded, wanted), _keys(now, wanted), tolerate)
    found = [drift for drift in drifts if not drift.tolerated]
    keys = {drift.key for drift in found}
    lines: list[str] = []
    if "model" in keys:
        lines.append(f"model: recorded {recorded.get('model')!r}, now {now.get('model')!r}")
    if "system_sha256" in keys:
        lines.append(
            f"system prompt: sha256 {hash_json(recorded.get('system'))[:12]} recorded, "
            f"{hash_json(now.get('system'))[:12]} now"
        )
        lines.extend(f"    {line}" for line in system_diff(recorded.get("system"), now.get("system")))
    if "tools" in wanted:
        tools = {key.removeprefix("tools.") for key in keys if key.startswith("tools.")}
        # The same schemas in another order is no key's drift, but the model sees other tools first.
        reordered = not any(drift.key.startswith("tools.") for drift in drifts)
        if tools or reordered:
            lines.extend(tool_differences(recorded.get("tools") or [], now.get("tools") or [], tools))
    return Staleness(lines, [drift for drift in drifts if drift.tolerated])


def system_diff(recorded: Any, now: Any) -> list[str]:
    """The text of two system prompts (a string, or the text of its blocks), diffed as messages are;
    where the text is the same, what else differs."""
    before, after = _system_text(recorded), _system_text(now)
    if before != after:
        return value_diff(before, after)
    return ["the same text: the blocks differ in their other fields (cache_control, type, ...)"]


def _system_text(system: Any) -> str:
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(
            str(block["text"])
            if isinstance(block, Mapping) and isinstance(block.get("text"), str)
            else str(block)
            for block in system
        )
    return str(system)


def request_contract_differences(
    recorded: Mapping[str, Any], now: Mapping[str, Any], fields: Iterable[str] = ("model", "system", "tools")
) -> list[str]:
    """What differs between two model requests' model id, system prompt and tool schemas, no
    tolerance applied (what a stale golden case shows)."""
    return check_request(recorded, now, fields).differences


def _keys(body: Mapping[str, Any], fields: set[str]) -> dict[str, Any]:
    return {key: value for key, value in request_contract(body).items() if _field(key) in fields}


def tool_differences(recorded: list[Any], now: list[Any], names: Iterable[str] | None = None) -> list[str]:
    """Tool schemas added, removed or changed, by tool name (only those `names`, when given)."""
    if hash_json(recorded) == hash_json(now):
        return []
    shown = None if names is None else set(names)
    old = {_name(tool, i): tool for i, tool in enumerate(recorded)}
    new = {_name(tool, i): tool for i, tool in enumerate(now)}
    found = [f"tool {name!r}: removed" for name in old if name not in new and _shown(name, shown)]
    found += [f"tool {name!r}: added" for name in new if name not in old and _shown(name, shown)]
    for name in old:
        if name in new and _shown(name, shown) and hash_json(old[name]) != hash_json(new[name]):
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


def _shown(name: str, shown: set[str] | None) -> bool:
    return shown is None or name in shown


def _name(tool: Any, index: int) -> str:
    if isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
        return str(tool["name"])
    return f"#{index}"


def stale(path: Path, differences: list[str], rerecord: str | None) -> StaleCassette:
    how = rerecord or "re-record it (pytest --agentevals-record=all, or agentevals record)"
    # A line that starts with a space continues the one above it (a system prompt's diff).
    lines = "\n".join(f"  {line}" if line.startswith(" ") else f"  - {line}" for line in differences)
    return StaleCassette(
        f"{path}: the cassette is stale: it was recorded against another environment:\n{lines}\n"
        f"Re-record it: {how}",
        path=path,
        fix=f"re-record it: {how}",
    )
