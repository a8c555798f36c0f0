"""The environment contract: what a recorded run assumed about the world it ran in."""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Iterable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .settings.tolerances import LEVELS, Tolerance, tolerances
from .trace.jsonable import canonical_json


def hash_json(value: Any) -> str:
    """A stable hash of a JSON value (keys sorted), for prompts, tool schemas and fixtures."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


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


__all__ = [
    "LEVELS",
    "Tolerance",
    "environment_contract",
    "hash_json",
    "observed_contract",
    "package_versions",
    "tolerances",
]
