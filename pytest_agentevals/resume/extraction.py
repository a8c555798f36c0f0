"""`extract`: a fixture from a recorded run's checkpoint, scrubbed of secrets like a promoted cassette.

The checkpoint at or before a step (or the last) of a trace becomes `<fixtures_dir>/<name>/`: its
state, its whole workspace (archive and index), the environment contract, lineage, the run up to the
checkpoint and, with `continuation=True`, the recorded rest of the run. Everything passes one
`Scrubber` (the traces through a `TraceWriter`, which owns one); the files are written into a scratch
folder, the manifest last, and the folder renamed into place.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..contract import recorded_contract
from ..errors import CheckpointError
from ..trace.events import Event
from ..trace.fidelity import require_trace
from ..trace.scrub import Scrubber
from ..trace.writer import TraceWriter
from .archive import ARCHIVE, INDEX, write_archive
from .fixture import CONTINUATION, FORMAT_VERSION, MANIFEST, STATE, TRACE, Fixture, check_name, sha256_of
from .restore import FILE, Entry, check_entries
from .source import SourceCheckpoint, lineage_of, read_checkpoint, snapshot_entries
from .store import write_whole


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-agentevals")
    except PackageNotFoundError:
        return "0.0.0"


def extract(
    trace: str | Path,
    at: int | str,
    name: str,
    fixtures_dir: Path,
    *,
    continuation: bool = False,
    files_from: Path | None = None,
    force: bool = False,
    secrets: Iterable[str] = (),
) -> tuple[Fixture, int]:
    """Write the fixture `name` from `trace`'s checkpoint at or before step `at` (or `"latest"`).
    Returns the fixture and how many secrets were scrubbed. Raises CheckpointError naming the trace
    or fixture, and leaves nothing behind, when anything is wrong."""
    check_name(name)
    require_trace(trace, "resume extract")  # before looking for a checkpoint an import never has
    source = read_checkpoint(trace, at)
    if continuation and (not source.after or source.after[-1].get("type") != "run_end"):
        raise CheckpointError(
            source.path,
            "the run has no end (no run_end event): its continuation is not a whole recording",
            "extract without --continuation (the fixture then resumes live only)",
        )
    scrubber = Scrubber(secrets)
    checkpoint = scrubber.scrub_event(source.checkpoint)
    entries, content = snapshot_entries(checkpoint, source.where, files_from)
    entries, content = _scrubbed(entries, content, scrubber)
    check_entries(entries, source.where)  # a hostile snapshot is refused before anything is written
    redactions = [scrubber.redactions]

    def build(folder: Path) -> None:
        _write_json(folder / STATE, checkpoint["state"])
        write_archive(folder, entries, content)
        redactions.append(_write_trace(folder / TRACE, source.events))
        if continuation:
            redactions.append(_write_trace(folder / CONTINUATION, [source.run_start, *source.after]))
        manifest = _manifest(name, source, scrubber, entries, folder, continuation)
        _write_json(folder / MANIFEST, manifest, sync=True)

    target = fixtures_dir / name
    write_whole(target, build, force=force)
    return Fixture.open(target), sum(redactions)


def _scrubbed(
    entries: list[Entry], content: dict[str, bytes], scrubber: Scrubber
) -> tuple[list[Entry], dict[str, bytes]]:
    """The workspace's files with secrets replaced, their sizes and hashes those of what is stored."""
    out: list[Entry] = []
    for entry in entries:
        if entry.kind != FILE:
            out.append(
                Entry(entry.path, entry.kind, entry.mode, target=scrubber.scrub_text(str(entry.target)))
            )
            continue
        data = scrubber.scrub_bytes(content[entry.path])
        content[entry.path] = data
        out.append(Entry(entry.path, FILE, entry.mode, len(data), hashlib.sha256(data).hexdigest()))
    return out, content


def _write_trace(path: Path, events: list[Event]) -> int:
    with TraceWriter(path) as writer:
        for event in events:
            writer.write(event)
    return writer.scrubber.redactions


def _write_json(path: Path, value: Any, sync: bool = False) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps(value, indent=1, ensure_ascii=False) + "\n")
        if sync:
            handle.flush()
            os.fsync(handle.fileno())


def _manifest(
    name: str,
    source: SourceCheckpoint,
    scrubber: Scrubber,
    entries: list[Entry],
    folder: Path,
    continuation: bool,
) -> dict[str, Any]:
    start = source.run_start
    files = [STATE, ARCHIVE, INDEX, TRACE, *([CONTINUATION] if continuation else [])]
    for file in files:  # every file reaches the disk before the manifest that vouches for it
        with (folder / file).open("rb") as handle:
            os.fsync(handle.fileno())
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    lineage = scrubber.scrub_value(lineage_of(source))
    return {
        "format": FORMAT_VERSION,
        "name": name,
        "created_at": now,
        "created_by": f"pytest-agentevals {_version()}",
        "agent": start.get("agent"),
        "task": scrubber.scrub_value(start.get("task")),
        "seed": start.get("seed"),
        "step": source.step,
        "checkpoint": scrubber.scrub_value(source.checkpoint.get("name")),
        "lineage": lineage,
        "contract": scrubber.scrub_value(recorded_contract(source.events)),
        "workspace": {
            "entries": len(entries),
            "files": sum(1 for e in entries if e.kind == FILE),
            "bytes": sum(e.size for e in entries),
        },
        "files": {
            file: {"sha256": sha256_of(folder / file), "size": (folder / file).stat().st_size}
            for file in files
        },
        "history": [
            {
                "at": now,
                "action": "extract",
                "source": lineage["trace"],
                "sha256": source.sha256,
                "step": source.step,
            }
        ],
    }
