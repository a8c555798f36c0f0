"""Workspace snapshots: what a checkpoint reads of the workspace, and when it reads a file again."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_agentevals.recording import workspace as snapshots


def _texts(snapshot: dict[str, Any]) -> dict[str, str]:
    return {path: entry["text"] for path, entry in snapshot["files"].items()}


def test_a_file_is_read_by_descriptor_with_no_file_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file object stats the file twice more and seeks once per read (a long run reads hundreds).
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "b.bin").write_bytes(b"\xff\x00" * 40_000)

    def no_file_object(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a snapshot opened a file object")

    monkeypatch.setattr(os, "fdopen", no_file_object)
    files = snapshots.Snapshotter().snapshot(tmp_path)["files"]
    assert files["a.txt"]["text"] == "alpha"
    assert files["b.bin"]["size"] == 80_000


def test_a_file_that_grew_after_its_size_was_taken_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    content = "x" * 100_000 + "the end"
    (tmp_path / "log.txt").write_text(content)
    real_fstat = os.fstat

    def older_size(fd: int) -> Any:  # the size it had a moment before the read
        info = real_fstat(fd)
        return SimpleNamespace(st_mode=info.st_mode, st_size=10)

    monkeypatch.setattr(os, "fstat", older_size)
    entry = snapshots.Snapshotter().snapshot(tmp_path)["files"]["log.txt"]
    assert entry["text"] == content
    assert entry["size"] == len(content)


def test_an_empty_file_and_a_fifo(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_bytes(b"")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe")  # not a plain file: never opened for reading, never waited on
    files = snapshots.Snapshotter().snapshot(tmp_path)["files"]
    assert files == {"empty.txt": {"sha256": files["empty.txt"]["sha256"], "size": 0, "text": ""}}
