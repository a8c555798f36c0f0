"""A small checkpointing agent and helpers for the resume-layer tests: record it against the simulated
server, extract a fixture from its run, craft hostile fixtures. Also copied into pytester folders, so
it imports nothing from the test suite."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic

import pytest_agentevals as ae
from pytest_agentevals.resume.extraction import extract
from pytest_agentevals.sim import Reply, SimServer

SYSTEM = "You finish numbered tasks."
TOOLS: list[dict[str, Any]] = [
    {
        "name": "finish",
        "description": "Finish a task.",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    }
]
MODEL = "claude-sonnet-4-6"
TOTAL = 6
TASK = {"agent": "counter", "total": TOTAL}


def run_counter(
    state: dict[str, Any], workspace: Path, *, system: str = SYSTEM, stop_at: int | None = None
) -> dict[str, Any]:
    """The agent: one model call per task, a file per task, a verification and a checkpoint each.
    Talks to a fresh simulated server; returns its final state."""
    done = int(state.get("done", 0))
    workspace.mkdir(parents=True, exist_ok=True)
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        while done < (stop_at or TOTAL):
            client.messages.create(
                model=MODEL,
                max_tokens=64,
                system=system,
                tools=TOOLS,
                messages=[{"role": "user", "content": f"task {done + 1}"}],
            )
            done += 1
            (workspace / "done").mkdir(exist_ok=True)
            (workspace / "done" / f"task{done}.txt").write_text(f"task {done} done\n")
            ae.verification(f"task {done}", True, progress=done / TOTAL)
            ae.checkpoint({"done": done}, workspace=workspace, name=f"task {done}")
    return {"done": done}


def record(path: Path, workspace: Path, contract: dict[str, Any] | None = None) -> Path:
    """A whole recorded run of the counter, with its task."""
    with ae.Recorder(path, agent="counter", seed=4, task=TASK, contract=contract or {"counter.schema": 2}):
        run_counter({}, workspace)
    return path


def make_fixture(root: Path, name: str = "counter-2", at: int = 2, continuation: bool = False) -> Path:
    """`root/fixtures/NAME` from a fresh recording's checkpoint at step `at`; returns its folder."""
    trace = record(root / "source" / f"{name}.trace.jsonl", root / "source" / f"{name}-ws")
    extract(trace, at, name, root / "fixtures", continuation=continuation, force=True)
    return root / "fixtures" / name


# -- crafting hostile fixtures ------------------------------------------------------------------------


@dataclass
class Member:
    """One tar member to craft: its name, tar type, mode, content or link target, and what the index
    should say of it (by default what it is)."""

    name: str
    data: bytes = b""
    type: bytes = tarfile.REGTYPE
    mode: int = 0o644
    linkname: str = ""
    index: dict[str, Any] | None = None

    def info(self) -> tarfile.TarInfo:
        info = tarfile.TarInfo(self.name)
        info.type, info.mode, info.linkname = self.type, self.mode, self.linkname
        info.size = len(self.data) if self.type in (tarfile.REGTYPE, tarfile.AREGTYPE) else 0
        return info

    def entry(self) -> dict[str, Any]:
        if self.index is not None:
            return self.index
        if self.type == tarfile.SYMTYPE:
            return {"path": self.name, "type": "link", "target": self.linkname}
        if self.type == tarfile.DIRTYPE:
            return {"path": self.name, "type": "dir", "mode": f"{self.mode:04o}"}
        return {
            "path": self.name,
            "type": "file",
            "mode": f"{self.mode:04o}",
            "size": len(self.data),
            "sha256": hashlib.sha256(self.data).hexdigest(),
        }


def rewrite(folder: Path, name: str, data: bytes) -> None:
    """Replace one of a fixture's files and vouch for it in the manifest (a consistent forgery)."""
    (folder / name).write_bytes(data)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def craft_archive(
    folder: Path, members: Sequence[Member], entries: Sequence[dict[str, Any]] | None = None
) -> None:
    """Give the fixture a workspace archive of exactly `members`, and an index of `entries` (default:
    each member's own), with the manifest vouching for both: only the member checks stand between
    this archive and the disk."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for member in members:
            archive.addfile(member.info(), io.BytesIO(member.data) if member.data else None)
    index = {"format": 1, "entries": list(entries) if entries is not None else [m.entry() for m in members]}
    rewrite(folder, "workspace.tar", buffer.getvalue())
    rewrite(folder, "workspace.index.json", json.dumps(index).encode())


def edit_manifest(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    change(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
