"""A trace, and any file written atomically, is never written through a committed link (issue 17)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_agentevals.errors import LinkRefused
from pytest_agentevals.fileio import write_atomic
from pytest_agentevals.trace.writer import TraceWriter


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("kept\n")
    return outside


def test_a_trace_that_is_a_link_is_refused(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    folder = tmp_path / "tree" / "cassettes"
    folder.mkdir(parents=True)
    link = folder / "run.trace.jsonl"
    link.symlink_to(outside / "victim.txt")
    with pytest.raises(LinkRefused, match=r"run\.trace\.jsonl: is a symbolic link"):
        TraceWriter(link)
    assert (outside / "victim.txt").read_text() == "kept\n"
    assert os.listdir(outside) == ["victim.txt"]


def test_a_trace_folder_that_is_a_link_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = _outside(tmp_path)
    tree = tmp_path / "tree"
    (tree / ".agentevals").mkdir(parents=True)
    (tree / ".agentevals" / "traces").symlink_to(outside)
    monkeypatch.chdir(tree)
    with pytest.raises(LinkRefused, match=r"traces: is a symbolic link"):
        TraceWriter(Path(".agentevals/traces/deep/run.trace.jsonl"))
    assert os.listdir(outside) == ["victim.txt"]  # not even the folder `deep` was made there


def test_an_atomic_write_over_a_link_is_refused(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    link = tmp_path / "report.html"
    link.symlink_to(outside / "victim.txt")
    with pytest.raises(LinkRefused, match=r"report\.html: is a symbolic link"):
        write_atomic(link, "new")
    assert link.is_symlink()  # the committed link is neither followed nor silently replaced
    assert (outside / "victim.txt").read_text() == "kept\n"
    assert sorted(os.listdir(tmp_path)) == ["outside", "report.html"]
