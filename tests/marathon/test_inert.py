"""The results file is never appended through a committed link (issue 17)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_agentevals.errors import LinkRefused
from pytest_agentevals.marathon.results import append_result

from ..marathon_support import result


def test_a_results_file_that_is_a_link_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim.txt"
    target.write_text("kept\n")
    folder = tmp_path / "tree" / ".agentevals" / "marathons"
    folder.mkdir(parents=True)
    link = folder / "results.jsonl"
    link.symlink_to(target)
    with pytest.raises(LinkRefused, match=r"results\.jsonl: is a symbolic link") as raised:
        append_result(link, result(1))
    assert "replace the link with the real file" in str(raised.value)
    assert target.read_text() == "kept\n"
    assert os.listdir(outside) == ["victim.txt"]


def test_a_results_folder_that_is_a_link_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    tree = tmp_path / "tree"
    (tree / ".agentevals").mkdir(parents=True)
    (tree / ".agentevals" / "marathons").symlink_to(outside)
    monkeypatch.chdir(tree)  # the root: every folder from here down is checked
    with pytest.raises(LinkRefused, match=r"marathons: is a symbolic link"):
        append_result(Path(".agentevals/marathons/results.jsonl"), result(1))
    assert os.listdir(outside) == []
