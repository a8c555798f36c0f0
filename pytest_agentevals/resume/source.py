"""A recorded run's checkpoint: the events up to it, its state, its workspace as entries, its lineage.

Shared by `agentevals resume extract` (which makes a fixture of it) and `resume_point_from_trace`
(which boots from it directly, as the marathon layer's supervisor does for a crashed seed).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import stat
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CheckpointError, TraceFormatError
from ..metrics import compute
from ..trace.events import Event
from ..trace.reader import TornTraceWarning, TraceReader
from ..workspace import MAX_FILE_BYTES, MAX_TOTAL_BYTES
from .restore import FILE, LINK, Entry

Latest = str  # the word "latest"
LATEST = "latest"


@dataclass
class SourceCheckpoint:
    """One checkpoint of a recorded run: `events` up to and including it, what followed (`after`,
    through the run's end), and the trace's path and SHA-256."""

    path: Path
    sha256: str
    events: list[Event]
    after: list[Event]
    torn: bool  # the trace's last line was cut off (a crash mid-write)

    @property
    def checkpoint(self) -> Event:
        return self.events[-1]

    @property
    def run_start(self) -> Event:
        return self.events[0]

    @property
    def step(self) -> int:
        return int(self.checkpoint["step"])

    @property
    def where(self) -> str:
        """The checkpoint as a person finds it: `trace:line`."""
        return f"{self.path}:{len(self.events)}"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parse_at(raw: int | str, where: str = "--at") -> int | Latest:
    """A step number (>= 0) or "latest"; CheckpointError otherwise."""
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        return raw
    if isinstance(raw, str) and raw.strip() == LATEST:
        return LATEST
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    raise CheckpointError(where, f"{raw!r} is not a step", 'give a step number >= 0, or "latest"')


def read_checkpoint(trace: str | Path, at: int | str) -> SourceCheckpoint:
    """The last checkpoint of `trace` at or before step `at` (or the last of all, `"latest"`).

    A trace cut off mid-write (a crashed run) is read as far as it goes. A trace that cannot be read,
    or has no such checkpoint, raises CheckpointError naming the file and the checkpoints it has.
    """
    path = Path(trace)
    target = parse_at(at)
    if not path.is_file():
        raise CheckpointError(path, "no such trace", "give the .trace.jsonl of a recorded run")
    events: list[Event] = []
    # Workspace deltas are left as stored: only the chosen checkpoint's workspace is rebuilt, by
    # applying the chain to one state (resolving each would copy the whole workspace per checkpoint).
    reader = TraceReader(path, workspaces=False)
    chosen: int | None = None
    steps: list[int] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornTraceWarning)
            for event in reader:
                events.append(event)
                if event.get("type") == "checkpoint":
                    steps.append(event["step"])
                    if target == LATEST or event["step"] <= target:
                        chosen = len(events) - 1
    except TraceFormatError as exc:
        raise CheckpointError(
            exc.path, f"line {exc.line}: {exc.problem}", "the trace is damaged; use an intact copy"
        ) from None
    if chosen is None:
        known = ", ".join(map(str, steps[:20])) + (" …" if len(steps) > 20 else "") if steps else "none"
        raise CheckpointError(
            path,
            f"no checkpoint at or before step {target} (checkpoints at steps: {known})",
            "the harness reports checkpoints with pytest_agentevals.checkpoint(state, workspace=...); "
            "choose a step at or after the first one",
        )
    workspaces = _workspaces_through(events, chosen)
    checkpoint = events[chosen]
    snapshot = checkpoint.get("workspace")
    if isinstance(snapshot, dict) and snapshot.get("base") == "previous":
        whole = {"root": snapshot["root"], "files": dict(workspaces[snapshot["root"]])}
        events[chosen] = {**checkpoint, "workspace": whole}
    return SourceCheckpoint(
        path=path,
        sha256=file_sha256(path),
        events=events[: chosen + 1],
        after=_whole_first(events[chosen + 1 :], workspaces),
        torn=bool(reader.problems),
    )


def _workspaces_through(events: list[Event], last: int) -> dict[str, dict[str, Any]]:
    """Each root's whole workspace at event `last`: the deltas applied in place to one state per
    root, so the work is what the trace holds (the reader checked every path and base)."""
    states: dict[str, dict[str, Any]] = {}
    for event in events[: last + 1]:
        snapshot = event.get("workspace") if event.get("type") == "checkpoint" else None
        if not isinstance(snapshot, dict):
            continue
        root = snapshot["root"]
        if snapshot.get("base") != "previous":
            states[root] = dict(snapshot["files"])
            continue
        state = states[root]
        state.update(snapshot["files"])
        for name in snapshot.get("removed", []):
            state.pop(name, None)
    return states


def _whole_first(after: list[Event], workspaces: dict[str, dict[str, Any]]) -> list[Event]:
    """The events after the checkpoint, each root's first workspace delta among them made whole
    (what it changes is before them), so they stand as a recording of their own."""
    pending = dict(workspaces)
    out = list(after)
    for index, event in enumerate(out):
        snapshot = event.get("workspace") if event.get("type") == "checkpoint" else None
        if not isinstance(snapshot, dict) or snapshot["root"] not in pending:
            continue
        state = pending.pop(snapshot["root"])
        if snapshot.get("base") == "previous":
            files = {**state, **snapshot["files"]}
            for name in snapshot.get("removed", []):
                files.pop(name, None)
            out[index] = {**event, "workspace": {"root": snapshot["root"], "files": files}}
        if not pending:
            break
    return out


def lineage_of(source: SourceCheckpoint) -> dict[str, Any]:
    """Where a checkpoint comes from and what the run had spent and verified by then."""
    start, checkpoint = source.run_start, source.checkpoint
    run = compute(source.events)
    return {
        "trace": str(source.path),
        "sha256": source.sha256,
        "run_id": start.get("run_id"),
        "agent": start.get("agent"),
        "started_at": start.get("started_at"),
        "checkpoint": checkpoint.get("name"),
        "seq": checkpoint.get("seq"),
        "line": len(source.events),
        "step": checkpoint["step"],
        "t": checkpoint.get("t"),
        "tokens": dict(run.tokens),
        "total_tokens": sum(run.tokens.values()),
        "cost_usd": round(run.cost_usd, 8),
        "model_calls": run.model_calls,
        "tool_calls": run.tool_calls,
        "compactions": run.compactions,
        "restarts": run.restarts,
        "progress": run.progress_end,
        "run_status": _end_status(source.after),
    }


def _end_status(after: list[Event]) -> str | None:
    """How the source run ended (None when the trace stops before its run_end: a crash)."""
    last = after[-1] if after else None
    return last.get("status") if last is not None and last.get("type") == "run_end" else None


MISSING_FIX = (
    "the trace keeps the content of files up to {small} KiB ({total} MiB in all), hashes only beyond: "
    "extract with --files-from DIR, a folder holding the workspace as it was at that checkpoint (each "
    "file is checked against the recorded SHA-256), or keep the agent's large files out of its workspace"
)


def snapshot_entries(
    checkpoint: Event, where: str, files_from: Path | None = None
) -> tuple[list[Entry], dict[str, bytes]]:
    """A checkpoint event's workspace snapshot as restore entries and their content, sorted by path.

    A file whose content the snapshot does not hold (over 256 KiB) is taken from `files_from` when
    given and its SHA-256 matches the recorded one; otherwise CheckpointError names the file."""
    snapshot = checkpoint.get("workspace")
    if snapshot is None:
        return [], {}
    files = snapshot.get("files") if isinstance(snapshot, Mapping) else None
    if not isinstance(files, Mapping):
        raise CheckpointError(where, "checkpoint.workspace has no files object", "the trace is damaged")
    entries: list[Entry] = []
    content: dict[str, bytes] = {}
    missing: list[str] = []
    for name in sorted(files):
        entry = files[name]
        if not isinstance(entry, Mapping):
            raise CheckpointError(where, f"workspace file {name!r} is not described by an object")
        if "link" in entry:
            entries.append(Entry(name, LINK, 0o777, target=entry["link"]))
            continue
        data, mode = _content(entry, name, where, files_from)
        if data is None:
            missing.append(f"{name} ({entry.get('size', '?')} bytes)")
            continue
        content[name] = data
        entries.append(Entry(name, FILE, mode, len(data), hashlib.sha256(data).hexdigest()))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise CheckpointError(
            where,
            f"the checkpoint's workspace snapshot holds no content for {shown}, so it cannot be restored",
            MISSING_FIX.format(small=MAX_FILE_BYTES // 1024, total=MAX_TOTAL_BYTES // (1024 * 1024)),
        )
    return entries, content


def _content(
    entry: Mapping[str, Any], name: str, where: str, files_from: Path | None
) -> tuple[bytes | None, int]:
    if isinstance(entry.get("text"), str):
        return entry["text"].encode("utf-8"), 0o644
    if isinstance(entry.get("base64"), str):
        try:
            return base64.b64decode(entry["base64"], validate=True), 0o644
        except (binascii.Error, ValueError):
            raise CheckpointError(where, f"workspace file {name!r}: its base64 content is damaged") from None
    if files_from is None:
        return None, 0o644
    candidate = files_from / name
    if candidate.is_symlink() or not candidate.is_file():
        return None, 0o644
    data = candidate.read_bytes()
    recorded = entry.get("sha256")
    if hashlib.sha256(data).hexdigest() != recorded:
        raise CheckpointError(
            candidate,
            f"is not the file {name!r} the checkpoint recorded (its SHA-256 is not {str(recorded)[:12]}…)",
            "give --files-from a folder holding the workspace as it was at that checkpoint",
        )
    return data, stat.S_IMODE(candidate.stat().st_mode) & 0o777
