"""The checkpoint fixture format, version 1: one self-contained folder per checkpoint.

```
fixtures/<name>/
  manifest.json              written last: format, name, source task and seed, step, lineage, the
                             environment contract (raw values), every other file's SHA-256 and size,
                             and the history (extracted, blessed...)
  state.json                 the agent's state, JSON (never pickle: a fixture arrives in pull requests)
  workspace.tar              the whole workspace at that point (see archive.py), never a delta chain
  workspace.index.json       path, type, mode, size and SHA-256 of every member
  trace.jsonl                the source run up to and including the checkpoint
  continuation.trace.jsonl   optional: the recorded run from the checkpoint to its end, for
                             @pytest.mark.resume(..., mode="replayed")
```

A folder without `manifest.json` is not a fixture (an extraction writes every other file first).
Every file is checked against the manifest's SHA-256 before it is used; the fixture's own SHA-256 is
the manifest's. Reading never runs code, never writes outside the folder the caller gives, never
follows a link, never expands without bound.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract import Drift, Tolerance, compare, current, enforce, is_request_key
from ..errors import CheckpointError, TraceFormatError
from ..trace.events import Event
from ..trace.loaders import load_json
from ..trace.reader import TornTraceWarning, TraceReader
from .archive import ARCHIVE, INDEX, Archive

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
STATE = "state.json"
TRACE = "trace.jsonl"
CONTINUATION = "continuation.trace.jsonl"
REQUIRED_FILES = (STATE, ARCHIVE, INDEX, TRACE)
KNOWN_FILES = (*REQUIRED_FILES, CONTINUATION)
MAX_JSON_BYTES = 64 * 1024 * 1024  # a manifest, a state or an index larger than this is refused
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
NAME_RULE = "letters, digits, '-', '_' and '.', starting with a letter or digit"
UPGRADE = "upgrade pytest-agentevals (pip install -U pytest-agentevals)"
REEXTRACT = "re-extract it: agentevals resume extract TRACE --at STEP --name {name} --force"


def check_name(name: str, where: str = "--name") -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise CheckpointError(where, f"{name!r} is not a fixture name", f"use {NAME_RULE}")
    return name


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class Fixture:
    """One checkpoint fixture, its manifest read and checked (`Fixture.open`)."""

    folder: Path
    manifest: dict[str, Any]
    sha256: str  # the manifest's: what names this exact fixture
    _state: dict[str, Any] | None = field(default=None, repr=False)

    # -- opening --------------------------------------------------------------------------------

    @classmethod
    def open(cls, folder: Path) -> Fixture:
        """Read and check the manifest of the fixture in `folder`; CheckpointError naming the fixture,
        the file and the fix otherwise."""
        folder = Path(folder)
        where = str(folder)
        path = folder / MANIFEST
        if folder.is_symlink() or not folder.is_dir():
            raise CheckpointError(where, "is not a fixture folder", "a fixture is a folder under fixtures/")
        if path.is_symlink() or not path.is_file():
            raise CheckpointError(
                where,
                f"has no {MANIFEST}: it is not a whole fixture (an extraction writes its manifest last, so "
                "this one was interrupted, or the file was deleted)",
                REEXTRACT.format(name=folder.name),
            )
        raw = _read_bounded(path, where)
        manifest = load_json(raw, _refused(where, MANIFEST, REEXTRACT.format(name=folder.name)))
        _check_manifest(manifest, where, folder.name)
        return cls(folder, manifest, hashlib.sha256(raw).hexdigest())

    # -- what the manifest says -----------------------------------------------------------------

    @property
    def name(self) -> str:
        return str(self.manifest["name"])

    @property
    def where(self) -> str:
        return str(self.folder)

    @property
    def step(self) -> int:
        return int(self.manifest["step"])

    @property
    def task(self) -> Any:
        return self.manifest.get("task")

    @property
    def seed(self) -> Any:
        return self.manifest.get("seed")

    @property
    def agent(self) -> str | None:
        agent = self.manifest.get("agent")
        return agent if isinstance(agent, str) else None

    @property
    def lineage(self) -> dict[str, Any]:
        return dict(self.manifest["lineage"])

    @property
    def contract(self) -> dict[str, Any]:
        return dict(self.manifest["contract"])

    @property
    def progress(self) -> float:
        value = self.manifest["lineage"].get("progress")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0

    @property
    def has_continuation(self) -> bool:
        return CONTINUATION in self.manifest["files"]

    # -- files, each checked against the manifest -----------------------------------------------

    def file(self, name: str) -> Path:
        """One of the fixture's files, its SHA-256 checked against the manifest's."""
        path = self.folder / name
        recorded = self.manifest["files"].get(name)
        if recorded is None:
            raise CheckpointError(self.where, f"has no {name}", REEXTRACT.format(name=self.name))
        if path.is_symlink():  # a fixture arrives in pull requests: a link could point anywhere
            raise CheckpointError(
                self.where,
                f"{name} is a symbolic link (to {os.readlink(path)}); a fixture is read from its own "
                "files only, never through a link",
                f"replace {path} with the real file, or delete it and " + REEXTRACT.format(name=self.name),
            )
        if not path.is_file():
            raise CheckpointError(
                self.where, f"{name} is missing (the manifest lists it)", REEXTRACT.format(name=self.name)
            )
        if path.stat().st_size != recorded["size"] or sha256_of(path) != recorded["sha256"]:
            raise CheckpointError(
                self.where,
                f"{name} was changed after extraction: its SHA-256 is not the one {MANIFEST} records",
                f"restore it from version control, or {REEXTRACT.format(name=self.name)}",
            )
        return path

    def state(self) -> dict[str, Any]:
        """The agent's state (a fresh copy each call)."""
        if self._state is None:
            raw = _read_bounded(self.file(STATE), self.where)
            state = load_json(raw, _refused(self.where, STATE, REEXTRACT.format(name=self.name)))
            if not isinstance(state, dict):
                raise CheckpointError(
                    self.where, f"{STATE} is not a JSON object", REEXTRACT.format(name=self.name)
                )
            self._state = state
        copy: dict[str, Any] = json.loads(json.dumps(self._state))
        return copy

    def archive(self) -> Archive:
        self.file(INDEX)
        return Archive(self.folder, self.where)

    def restore(self, workspace: Path) -> Path:
        """The workspace, restored into `workspace` (new, or an empty folder): whole, or nothing."""
        return self.archive().restore(Path(workspace))

    def events(self) -> list[Event]:
        """The source run up to and including the checkpoint."""
        return read_events(self.file(TRACE), self.where)

    def continuation(self) -> Path:
        """The recorded continuation (for a replayed leg)."""
        if not self.has_continuation:
            raise CheckpointError(
                self.where,
                "holds no recorded continuation, so it cannot be resumed in replayed mode",
                f"re-extract it with --continuation (agentevals resume extract TRACE --at STEP --name "
                f"{self.name} --continuation --force), or resume it live",
            )
        return self.file(CONTINUATION)

    # -- the contract ---------------------------------------------------------------------------

    def drift(
        self,
        declared: Mapping[str, Any] | None = None,
        tolerate: Sequence[Tolerance] = (),
        *,
        harness: bool = True,
    ) -> list[Drift]:
        """How this environment differs from the recorded contract, where it is known before anything
        runs: Python, packages, and (with `harness`) what the harness declares now (`declared`)."""
        recorded = {k: v for k, v in self.contract.items() if not is_request_key(k)}
        now = current(recorded, declared)
        if not harness:
            now = {k: v for k, v in now.items() if k == "python" or k.startswith("packages.")}
        return compare(recorded, now, tolerate)

    def check_contract(
        self,
        declared: Mapping[str, Any] | None = None,
        *,
        policy: str = "fail",
        tolerate: Sequence[Tolerance] = (),
    ) -> list[Drift]:
        """The Python API of the contract check: under `fail` a drift raises `ContractDrift` (the table
        and how to fix it); under `warn` the drifts are returned; under `skip` nothing is checked."""
        if policy == "skip":
            return []
        return enforce(self.drift(declared, tolerate), policy, self.where, self.name)

    def declared_keys(self) -> list[str]:
        """The contract keys the harness declared (neither Python, packages nor request keys)."""
        return [
            key
            for key in self.contract
            if key != "python" and not key.startswith("packages.") and not is_request_key(key)
        ]


def read_events(path: Path, where: str) -> list[Event]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornTraceWarning)
            return list(TraceReader(path, workspaces=False))  # the workspace is the archive's
    except TraceFormatError as exc:
        raise CheckpointError(
            where, f"{path.name}:{exc.line}: {exc.problem}", "re-extract the fixture"
        ) from None


def _read_bounded(path: Path, where: str) -> bytes:
    if path.stat().st_size > MAX_JSON_BYTES:
        raise CheckpointError(
            where,
            f"{path.name} is larger than {MAX_JSON_BYTES:,} bytes",
            "a fixture's JSON files are bounded",
        )
    return path.read_bytes()


def _check_manifest(manifest: Any, where: str, folder_name: str) -> None:
    fix = REEXTRACT.format(name=folder_name)
    if not isinstance(manifest, dict):
        raise CheckpointError(where, f"{MANIFEST} is not a JSON object", fix)
    version = manifest.get("format")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise CheckpointError(
            where,
            f"{MANIFEST} is in fixture format {version}, written by a newer pytest-agentevals (this one "
            f"reads format {FORMAT_VERSION})",
            UPGRADE,
        )
    if version != FORMAT_VERSION:
        raise CheckpointError(
            where, f"{MANIFEST}: fixture format {version!r} is not one this reader knows", fix
        )
    shapes: tuple[tuple[str, type | tuple[type, ...]], ...] = (
        ("name", str),
        ("step", int),
        ("lineage", dict),
        ("contract", dict),
        ("files", dict),
        ("history", list),
    )
    for key, kind in shapes:
        if not isinstance(manifest.get(key), kind) or isinstance(manifest.get(key), bool):
            raise CheckpointError(where, f"{MANIFEST}: {key!r} is missing or not a {_kind(kind)}", fix)
    _check_shown(manifest, where, fix)
    files = manifest["files"]
    for name, recorded in files.items():
        if name not in KNOWN_FILES:
            raise CheckpointError(
                where,
                f"{MANIFEST} lists {name!r}, which is not a fixture file ({', '.join(KNOWN_FILES)})",
                fix,
            )
        if (
            not isinstance(recorded, dict)
            or not isinstance(recorded.get("sha256"), str)
            or isinstance(recorded.get("size"), bool)
            or not isinstance(recorded.get("size"), int)
        ):
            raise CheckpointError(where, f"{MANIFEST}: files.{name} needs a sha256 and a size", fix)
    for name in REQUIRED_FILES:
        if name not in files:
            raise CheckpointError(where, f"{MANIFEST} does not list {name}", fix)


# What `resume list` and `show` print of a manifest beyond the keys every reader needs: each checked
# here, so a committed manifest with a wrong-typed value is one error, not a traceback in a command.
_TEXTS = ("agent", "checkpoint", "created_at", "created_by")
_LINEAGE_NUMBERS = (
    *("seq", "line", "step", "t", "total_tokens", "cost_usd", "model_calls", "tool_calls"),
    *("compactions", "restarts", "progress"),
)


def _check_shown(manifest: dict[str, Any], where: str, fix: str) -> None:
    for key in _TEXTS:
        if manifest.get(key) is not None and not isinstance(manifest[key], str):
            raise CheckpointError(where, f"{MANIFEST}: {key!r} is not a string", fix)
    seed = manifest.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise CheckpointError(where, f"{MANIFEST}: 'seed' is not a whole number", fix)
    workspace = manifest.get("workspace")
    if not isinstance(workspace, dict) or not all(_count(workspace.get(key)) for key in ("files", "bytes")):
        raise CheckpointError(
            where,
            f"{MANIFEST}: 'workspace' is missing, or its files and bytes are not counts",
            fix,
        )
    for index, entry in enumerate(manifest["history"]):
        if not isinstance(entry, dict):
            raise CheckpointError(where, f"{MANIFEST}: history[{index}] is not a JSON object", fix)
    lineage = manifest["lineage"]
    for key in _LINEAGE_NUMBERS:
        value = lineage.get(key)
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            raise CheckpointError(where, f"{MANIFEST}: lineage.{key} is {value!r}, not a number >= 0", fix)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _kind(kind: type | tuple[type, ...]) -> str:
    names = {str: "string", int: "whole number", dict: "JSON object", list: "list"}
    return names.get(kind, "value") if isinstance(kind, type) else "value"


def _refused(where: str, name: str, fix: str) -> Callable[[int, str], CheckpointError]:
    """What the bounded JSON loader raises for a fixture's `name`: the fixture, the file and line."""

    def fail(line: int, problem: str) -> CheckpointError:
        return CheckpointError(where, f"{name} is not JSON (line {line}: {problem})", fix)

    return fail
