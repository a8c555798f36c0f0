"""The one atomic-write helper: old file or new file, never half of one, no temporary left behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_agentevals.fileio import atomic_path, remove_tree, write_atomic


def test_write_atomic_writes_text_and_bytes_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "goldens.yaml"
    write_atomic(target, "first ✓\n")
    assert target.read_text(encoding="utf-8") == "first ✓\n"
    write_atomic(target, b"\x00second")
    assert target.read_bytes() == b"\x00second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["goldens.yaml"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "store.trace.jsonl"
    target.write_text("old\n")

    def crashing_writer() -> None:
        with atomic_path(target) as temp:
            temp.write_text("half of the new")
            raise RuntimeError("the writer crashed")

    with pytest.raises(RuntimeError):
        crashing_writer()
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.trace.jsonl"]


def test_the_temporary_is_beside_the_target_and_unique(tmp_path: Path) -> None:
    target = tmp_path / "a.yaml"
    with atomic_path(target) as one, atomic_path(target) as two:
        assert one.parent == two.parent == tmp_path  # os.replace never crosses file systems
        assert one != two  # two writers never share a temporary file
        one.write_text("one")
        two.write_text("two")
    assert target.read_text() == "one"  # the last to finish (the outer one) wins, whole


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_the_file_gets_the_umask_permissions_not_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "shared.yaml", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "shared.yaml").stat().st_mode) == 0o644


def test_remove_tree_takes_a_tree_deeper_than_the_recursion_limit(tmp_path: Path) -> None:
    root = tmp_path / "root"
    folder = root
    for _ in range(1500):  # shutil.rmtree (and os.makedirs) on 3.11 recurse once per level
        folder = folder / "d"
        folder.mkdir(parents=folder == root / "d")
    (root / "d" / "f").write_text("x")
    remove_tree(root)
    assert os.listdir(tmp_path) == []


def test_remove_tree_removes_a_link_never_what_it_points_to(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    root = tmp_path / "root"
    root.mkdir()
    (root / "out").symlink_to(outside)
    (root / "file-link").symlink_to(outside / "keep.txt")
    remove_tree(root)
    assert not root.exists()
    assert (outside / "keep.txt").read_text() == "keep"


def test_remove_tree_of_nothing_is_nothing(tmp_path: Path) -> None:
    remove_tree(tmp_path / "absent")
    assert os.listdir(tmp_path) == []
