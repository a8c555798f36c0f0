"""A workspace file of any size costs a snapshot a chunk of memory (issue 35): a file past the
content bound is hashed as it is read, never read whole (a 2 GiB file took 4.1 GB, and 8 GiB raised
MemoryError mid-recording)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from pytest_agentevals.workspace import MAX_FILE_BYTES
from pytest_agentevals.workspace.files import HASH_CHUNK, file_entry

ROOT = Path(__file__).resolve().parents[2]
ZEROS_384_MIB = "3201548f7070f0ae5adf2c869b15df99b5f85ca51feda443c1597c130976619a"


def test_a_file_larger_than_the_memory_the_process_may_use_is_hashed_by_size_and_hash_only() -> None:
    # 384 MiB under an address-space limit of 160 MB more than the process maps: read whole, it
    # raised MemoryError; hashed a chunk at a time, it costs a chunk.
    done = subprocess.run(
        [sys.executable, "-m", "tests.memory_probe", "snapshot", "384", "160"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["entry"] == {"sha256": ZEROS_384_MIB, "size": 384 * 1024 * 1024}
    assert result["peak_after_mb"] - result["peak_before_mb"] < 32


def test_a_small_file_keeps_its_content_and_a_large_one_only_its_size_and_hash(tmp_path: Path) -> None:
    (tmp_path / "small.txt").write_text("hello")
    large = b"x" * (MAX_FILE_BYTES + HASH_CHUNK + 3)  # over the bound, and over one chunk
    (tmp_path / "large.bin").write_bytes(large)
    assert file_entry(str(tmp_path), "small.txt", True) == {
        "sha256": hashlib.sha256(b"hello").hexdigest(),
        "size": 5,
        "text": "hello",
    }
    assert file_entry(str(tmp_path), "large.bin", False) == {
        "sha256": hashlib.sha256(large).hexdigest(),
        "size": len(large),
    }


def test_a_file_that_grew_past_the_bound_after_it_was_listed_is_hashed_without_its_content(
    tmp_path: Path,
) -> None:
    grown = b"y" * (MAX_FILE_BYTES + 10)
    (tmp_path / "grown.log").write_bytes(grown)
    # Listed when it was small (with content asked), read once it had grown.
    assert file_entry(str(tmp_path), "grown.log", True) == {
        "sha256": hashlib.sha256(grown).hexdigest(),
        "size": len(grown),
    }


def test_a_link_or_a_folder_has_no_entry(tmp_path: Path) -> None:
    (tmp_path / "target.txt").write_text("t")
    (tmp_path / "link").symlink_to(tmp_path / "target.txt")
    (tmp_path / "folder").mkdir()
    assert file_entry(str(tmp_path), "link", True) is None
    assert file_entry(str(tmp_path), "folder", False) is None
