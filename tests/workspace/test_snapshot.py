"""Workspace snapshots: what a checkpoint reads of the workspace, and when it reads a file again."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_agentevals.workspace import snapshot as snapshots
from pytest_agentevals.workspace import watch as workspace_watch

# What every snapshot promises holds with inotify watching (Linux) and with every file stat'ed.
both_ways = pytest.mark.parametrize("watch", [True, False], ids=["watched", "walked"])


def _texts(snapshot: dict[str, Any]) -> dict[str, str]:
    return {path: entry["text"] for path, entry in snapshot["files"].items()}


@both_ways
def test_a_file_is_read_by_descriptor_with_no_file_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: bool
) -> None:
    # A file object stats the file twice more and seeks once per read (a long run reads hundreds).
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "b.bin").write_bytes(b"\xff\x00" * 40_000)

    def no_file_object(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a snapshot opened a file object")

    monkeypatch.setattr(os, "fdopen", no_file_object)
    files = snapshots.Snapshotter(watch=watch).snapshot(tmp_path)["files"]
    assert files["a.txt"]["text"] == "alpha"
    assert files["b.bin"]["size"] == 80_000


@both_ways
def test_a_file_that_grew_after_its_size_was_taken_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: bool
) -> None:
    content = "x" * 100_000 + "the end"
    (tmp_path / "log.txt").write_text(content)
    real_fstat = os.fstat

    def older_size(fd: int) -> Any:  # the size it had a moment before the read
        info = real_fstat(fd)
        return SimpleNamespace(st_mode=info.st_mode, st_size=10, st_dev=info.st_dev, st_ino=info.st_ino)

    monkeypatch.setattr(os, "fstat", older_size)
    entry = snapshots.Snapshotter(watch=watch).snapshot(tmp_path)["files"]["log.txt"]
    assert entry["text"] == content
    assert entry["size"] == len(content)


@both_ways
def test_an_empty_file_and_a_fifo(tmp_path: Path, watch: bool) -> None:
    (tmp_path / "empty.txt").write_bytes(b"")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe")  # not a plain file: never opened for reading, never waited on
    files = snapshots.Snapshotter(watch=watch).snapshot(tmp_path)["files"]
    assert files == {"empty.txt": {"sha256": files["empty.txt"]["sha256"], "size": 0, "text": ""}}


@both_ways
def test_a_file_unchanged_since_well_before_its_read_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: bool
) -> None:
    (tmp_path / "old.txt").write_text("old")
    past = time.time_ns() - 10 * 1_000_000_123  # long ago, and not in whole seconds
    os.utime(tmp_path / "old.txt", ns=(past, past))
    snapshotter = snapshots.Snapshotter(watch=watch)
    first = snapshotter.snapshot(tmp_path)
    reads: list[str] = []
    real_read = snapshots.file_entry

    def counted(folder: Any, name: str, with_content: bool) -> dict[str, Any] | None:
        reads.append(name)
        return real_read(folder, name, with_content)

    monkeypatch.setattr(snapshots, "file_entry", counted)
    monkeypatch.setattr(workspace_watch, "file_entry", counted)
    second = snapshotter.snapshot(tmp_path)
    assert reads == []
    assert second["files"]["old.txt"] is first["files"]["old.txt"]  # the writer settles it by `is`


@both_ways
def test_a_file_rewritten_within_a_whole_second_timestamp_is_read_again(tmp_path: Path, watch: bool) -> None:
    # A file system that keeps whole seconds (ext3, HFS+; FAT two) gives a file written again in the
    # same second, at the same size, the same time: 50 ms after it is no proof that it has not changed.
    path = tmp_path / "a.txt"
    path.write_text("v1")
    second = (time.time_ns() // 1_000_000_000 - 1) * 1_000_000_000  # a second or two before the read
    os.utime(path, ns=(second, second))
    snapshotter = snapshots.Snapshotter(watch=watch)
    assert _texts(snapshotter.snapshot(tmp_path)) == {"a.txt": "v1"}
    path.write_text("v2")
    os.utime(path, ns=(second, second))  # what such a file system keeps of the second write
    assert _texts(snapshotter.snapshot(tmp_path)) == {"a.txt": "v2"}


@both_ways
def test_virtual_environments_and_tool_caches_are_left_out(tmp_path: Path, watch: bool) -> None:
    # A project's root with its environments inside (as .ci/run's clone holds .ci-venv and
    # .ci-venv-floor): a snapshot of it held tens of thousands of installed files.
    kept = ["agent.py", "src/venue.py", "inventory/list.txt", "envoy/notes.md"]
    left = [
        ".ci-venv/lib/site.py", ".ci-venv-floor/bin/python3", "venv/pyvenv.cfg", ".venv311/x.py",
        "py311-venv/lib/a.py", ".mypy_cache/3.11/a.json", ".ruff_cache/x", ".pytest_cache/v/x",
    ]  # fmt: skip
    for name in kept + left:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    snapshotter = snapshots.Snapshotter(watch=watch)
    assert sorted(snapshotter.snapshot(tmp_path)["files"]) == sorted(kept)
    (tmp_path / ".ci-venv" / "lib" / "new.py").write_text("installed later")
    (tmp_path / "src" / "new.py").write_text("written later")
    assert sorted(snapshotter.snapshot(tmp_path)["files"]) == sorted([*kept, "src/new.py"])
