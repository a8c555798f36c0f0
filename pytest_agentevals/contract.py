"""The environment contract: what a recorded run assumed about the world it ran in, and how the
world now differs from it. One contract, one drift table and one set of declared tolerances
(`contract_tolerate`) for the replay layer's staleness check and the resume layer's boot alike.

A recording's `run_start.contract` holds what is known when a run starts (`environment_contract`:
Python, package versions, what the harness declared); its first model request shows the rest. As
flat keys and raw values, never only a hash, so a drift reads as `packages.anthropic | 2.14.0 |
2.15.1`:

- `python`, `packages.NAME`: the Python version and each recorded package's version
  (pytest-agentevals and `contract_packages`);
- any other key: what the harness declared (`Recorder(contract=...)`, the
  `pytest_agentevals_contract()` hook), nested tables flattened with dots;
- `model`, `request.PARAM`, `system_sha256`, `tools.NAME`: the model id and request parameters of the
  run's first model call, the SHA-256 of its system prompt and of each tool's schema (`is_request_key`:
  checked against a live run's first model request, the harness says what they are by sending them).

A drift is shown as a table `key | recorded | now | severity`. Severity: for versions the first
component that changed (`major`, `minor`, `patch`); else `changed`; `missing` when nothing has the
key now, `added` for a key the recording did not have. A drift is tolerated only where declared:
`KEY` (a glob, `packages.*`) tolerates any drift of the key, `KEY:patch` or `KEY:minor` only drifts
up to that severity. What a drift does is the layer's: a resume applies its policy (`enforce`), a
replay calls its cassette stale (`replay/staleness.py`).
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

from .errors import ContractDrift
from .settings.tolerances import LEVELS, Tolerance, tolerances
from .trace.events import Event
from .trace.jsonable import canonical_json
from .trace.totals import http_ok, is_model_call

# Request parameters that belong to the contract (not the conversation): those a harness sets once.
REQUEST_PARAMS = ("max_tokens", "temperature", "top_p", "top_k", "stop_sequences", "thinking")
_VERSION = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?")


# -- collect: what a run's environment is -----------------------------------------------------------


class ContractDriftWarning(UserWarning):
    """A recorded contract drifted and the run went on: a resume whose policy is `warn`, or a replay
    or resume whose drift `contract_tolerate` tolerates. The message holds the drift table."""


def hash_json(value: Any) -> str:
    """A stable hash of a JSON value (keys sorted), for prompts, tool schemas and fixtures."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def package_versions(packages: Iterable[str]) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in packages:
        try:
            versions[name] = _version(distribution(name))
        except PackageNotFoundError:
            versions[name] = None
    return versions


def _version(dist: Distribution) -> str:
    """The distribution's `Version:`, read off its metadata's headers; `dist.version` where they are
    not plain. `dist.version` parses the whole file with the email parser (a package's README is in
    it): three quarters of an empty recording's start, paid by every recorded run."""
    # Where importlib.metadata looks, in its order (an egg-info file is read as the path itself).
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or dist.read_text("") or ""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if not line.rstrip("\r"):
            break  # the headers end at the first blank line
        if line[:8].lower() == "version:":
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if following[:1] not in (" ", "\t"):  # a folded header is the parser's to join
                return line[8:].lstrip(" \t").rstrip("\r")
            break
    return dist.version


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


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()  # a key that nothing has now (distinct from a recorded null)


# -- flatten: the contract's keys ------------------------------------------------------------------


def flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested tables as flat dotted keys: `{"db": {"schema": 3}}` -> `{"db.schema": 3}`."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def is_request_key(key: str) -> bool:
    """A key the harness's model requests show (checked at a run's first model request)."""
    return key == "model" or key == "system_sha256" or key.startswith(("request.", "tools."))


def is_version_key(key: str) -> bool:
    return key == "python" or key.startswith("packages.")


def request_contract(body: Mapping[str, Any]) -> dict[str, Any]:
    """What a model request body says about the environment: model, parameters, prompt and tools."""
    out: dict[str, Any] = {"model": body.get("model")}
    for param in REQUEST_PARAMS:
        if param in body:
            out[f"request.{param}"] = body[param]
    out["system_sha256"] = hash_json(body.get("system"))
    tools = body.get("tools")
    for index, tool in enumerate(tools if isinstance(tools, list) else []):
        name = tool.get("name") if isinstance(tool, Mapping) else None
        out[f"tools.{name if isinstance(name, str) else f'#{index}'}"] = hash_json(tool)
    return out


def recorded_contract(events: Iterable[Event]) -> dict[str, Any]:
    """The contract of a recorded run, from its events: run_start's contract (Python, packages and
    what the harness declared) and what its first successful model request showed."""
    contract: dict[str, Any] = {}
    for event in events:
        kind = event.get("type")
        if kind == "run_start":
            raw = event.get("contract")
            if isinstance(raw, Mapping):
                contract.update(flatten(raw))
        elif kind == "model_call" and is_model_call(event) and http_ok(event):
            body = event.get("request", {}).get("body")
            if isinstance(body, Mapping):
                # A declared model or hash gives way to what the request showed.
                contract = {k: v for k, v in contract.items() if k not in ("model", "system_sha256")}
                contract.update(request_contract(body))
                break
    return contract


def current(keys: Iterable[str], declared: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The values of `keys` in this environment, where they are known before anything runs: Python,
    package versions, and what the harness declares now (`declared`, flattened). Request keys are
    left out (the leg's first request shows them)."""
    flat = flatten(declared or {})
    packages = [key.removeprefix("packages.") for key in keys if key.startswith("packages.")]
    versions = package_versions(packages)
    now: dict[str, Any] = {}
    for key in keys:
        if key == "python":
            now[key] = platform.python_version()
        elif key.startswith("packages."):
            now[key] = versions[key.removeprefix("packages.")]
        elif not is_request_key(key):
            now[key] = flat.get(key, ABSENT)
    return now


# -- drift: the table, severity, tolerances --------------------------------------------------------


@dataclass(frozen=True)
class Drift:
    """One key whose value now differs from the recorded one."""

    key: str
    recorded: Any
    now: Any
    severity: str
    tolerated: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "recorded": None if self.recorded is ABSENT else self.recorded,
            "now": None if self.now is ABSENT else self.now,
            "severity": self.severity,
            "tolerated": self.tolerated,
        }


def severity(key: str, recorded: Any, now: Any) -> str:
    if now is ABSENT:
        return "missing"
    if recorded is ABSENT:
        return "added"
    if is_version_key(key) and isinstance(recorded, str) and isinstance(now, str):
        old, new = _VERSION.match(recorded), _VERSION.match(now)
        if old and new:
            for level, a, b in zip(("major", "minor", "patch"), old.groups(), new.groups(), strict=True):
                if (a or "0") != (b or "0"):
                    return level
            return "patch"  # the same numbers, another suffix (a pre-release, a local build)
    return "changed"


def compare(
    recorded: Mapping[str, Any], now: Mapping[str, Any], tolerate: Sequence[Tolerance] = ()
) -> list[Drift]:
    """The keys of `now` whose value differs from `recorded`, each with its severity and whether a
    declared tolerance covers it. A recorded key `now` does not name is not compared."""
    drifts: list[Drift] = []
    for key in sorted(now):
        if key not in recorded or _same(recorded[key], now[key]):
            continue
        found = Drift(key, recorded[key], now[key], severity(key, recorded[key], now[key]))
        if any(t.covers(found.key, found.severity) for t in tolerate):
            found = Drift(found.key, found.recorded, found.now, found.severity, True)
        drifts.append(found)
    return drifts


def compare_request(
    recorded: Mapping[str, Any], now: Mapping[str, Any], tolerate: Sequence[Tolerance] = ()
) -> list[Drift]:
    """`compare` for the request keys of two model requests (`request_contract`): a recorded tool
    or parameter the request no longer sends is missing, a new one added."""
    both = {**{key: ABSENT for key in recorded}, **now}
    return compare({**{key: ABSENT for key in now}, **recorded}, both, tolerate)


def _same(a: Any, b: Any) -> bool:
    if a is ABSENT or b is ABSENT:
        return a is b
    return hash_json(a) == hash_json(b)


def show(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    if value is None:
        return "not installed"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 40 else text[:19] + "…" + text[-20:]


def table(drifts: Sequence[Drift]) -> str:
    """The drift as a table a person reads: `key | recorded | now | severity`."""
    rows = [("key", "recorded", "now", "severity")]
    rows += [
        (d.key, show(d.recorded), show(d.now), d.severity + (" (tolerated)" if d.tolerated else ""))
        for d in drifts
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [" | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join("  " + line.rstrip() for line in lines)


def fix_for(name: str | None) -> str:
    """How to fix a drift of fixture `name` (or of a trace's checkpoint, when None)."""
    if name is None:
        return (
            "resume in the environment the run was recorded in, or tolerate the keys "
            "([tool.agentevals] contract_tolerate)"
        )
    return (
        f"re-extract the fixture from a run recorded in this environment (agentevals resume extract "
        f"TRACE --at STEP --name {name} --force), or, if the drift is harmless, bless it: "
        f"agentevals resume bless {name} --reason '...' (kept in the manifest's history); or "
        "tolerate the keys in [tool.agentevals] contract_tolerate, or "
        '@pytest.mark.resume(..., contract_policy="warn")'
    )


def enforce(drifts: Sequence[Drift], policy: str, where: str | Path, name: str | None) -> list[Drift]:
    """Apply the policy: under `fail`, a drift no tolerance covers raises `ContractDrift` (the whole
    table, tolerated rows too). Returns the drifts (for a report; empty under `skip`)."""
    if policy == "skip":
        return []
    if policy == "fail" and any(not drift.tolerated for drift in drifts):
        raise ContractDrift(where, table(drifts), fix_for(name))
    return list(drifts)


# -- what a harness declares, shown (`agentevals contract`) ----------------------------------------


def declared_shown(declared: Mapping[str, Any], format: str) -> str:
    """What a harness declares (`graph_contract(graph)`, say): one `key  value` line per key,
    flattened as a fixture's manifest names them, or (`json`) the nested dict itself."""
    if format == "json":
        return json.dumps(declared, indent=2, sort_keys=True)
    return "\n".join(f"{key}  {value}" for key, value in sorted(flatten(declared).items()))


def drift_shown(
    name: str, declared: Mapping[str, Any], drifts: Sequence[Drift], recorded: int, what: str, format: str
) -> str:
    """How `declared` (`what`: "the graph's") differs from fixture `name`'s `recorded` keys of it."""
    if format == "json":
        shown = {"fixture": name, "contract": declared, "drift": [drift.to_json() for drift in drifts]}
        return json.dumps(shown, indent=2)
    if not recorded:
        return f"{name}: its contract holds none of {what} keys (recorded without them)"
    if drifts:
        return f"{name}: {what} contract drifted:\n{table(drifts)}"
    return f"{name}: {what} {recorded} contract key(s) match the recorded ones"


__all__ = [
    "ABSENT",
    "LEVELS",
    "REQUEST_PARAMS",
    "Drift",
    "Tolerance",
    "compare",
    "compare_request",
    "current",
    "declared_shown",
    "drift_shown",
    "enforce",
    "environment_contract",
    "fix_for",
    "flatten",
    "hash_json",
    "is_request_key",
    "is_version_key",
    "observed_contract",
    "package_versions",
    "recorded_contract",
    "request_contract",
    "severity",
    "show",
    "table",
    "tolerances",
]
