"""The recorded decisions beside a goldens file are untrusted data too: never read through a link."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentevals.errors import GoldenError
from pytest_agentevals.step.store import DecisionStore, write_store


def test_a_decisions_file_that_is_a_link_is_refused_naming_it(tmp_path: Path) -> None:
    # A real store elsewhere, whose exchanges would replay if the link were followed.
    elsewhere = tmp_path / "elsewhere.decisions.trace.jsonl"
    fields = {"provider": "anthropic", "request": {"body": {"model": "m"}}, "response": {"status": 200}}
    assert write_store(elsewhere, {"case-1": [fields]}, ["case-1"], "demo") == 1
    assert DecisionStore(elsewhere).exchanges("case-1")  # readable as itself
    link = tmp_path / "demo.decisions.trace.jsonl"
    link.symlink_to(elsewhere)
    with pytest.raises(GoldenError) as raised:
        DecisionStore(link, "goldens/demo.decisions.trace.jsonl").by_case()
    message = str(raised.value)
    assert "goldens/demo.decisions.trace.jsonl" in message
    assert "symbolic link" in message
    assert str(elsewhere) in message
    assert "re-record" in message
