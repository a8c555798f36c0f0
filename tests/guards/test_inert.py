"""The day ledger is never written through a committed link: not its lock, not its JSON (issue 17)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_agentevals.errors import LedgerError
from pytest_agentevals.guards.ledger import Ledger


@pytest.mark.parametrize("name", ["ledger.json.lock", "ledger.json"])
def test_a_ledger_file_that_is_a_link_is_refused(tmp_path: Path, name: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "tree" / ".agentevals"
    folder.mkdir(parents=True)
    link = folder / name
    link.symlink_to(outside / "target")
    with pytest.raises(LedgerError) as raised:
        Ledger(folder / "ledger.json").start_run("a", 1.0)
    assert f"{link}: is a symbolic link" in str(raised.value)
    assert "replace the link with the real file" in str(raised.value)
    assert os.listdir(outside) == []  # nothing created at the link's target
