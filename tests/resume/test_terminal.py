"""Terminal-safe output (issue 17): contract values and names from a fixture in a pull request never
reach the terminal as raw control characters (`agentevals resume list | show | verify`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentevals.trace.terminal import safe, safe_line

from ..conftest import run_agentevals
from ..resume_support import edit_manifest, record

pytest_plugins = ["pytester"]

# Clear the screen, move up and erase the line, then a forged OSC 8 link, and a bidi override.
HOSTILE = "\x1b[2J\x1b[1A\x1b[2K\r\x1b]8;;https://evil.example\x07click\x1b]8;;\x07\u202e\x9b31m"


def _unsafe(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or c == "\u202e"]


def test_the_helper_escapes_every_control_but_newline_and_tab() -> None:
    assert safe("a\x1b[2Jb\n\tc\u202e") == "a\\x1b[2Jb\n\tc\\u202e"
    assert safe_line("a\nb") == "a\\nb"
    assert _unsafe(safe(HOSTILE)) == []


def test_resume_list_show_verify_escape_what_a_fixture_holds(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.agentevals]\n")
    record(tmp_path / "runs" / "counter.trace.jsonl", tmp_path / "runs" / "ws")
    done = run_agentevals(
        "resume", "extract", "runs/counter.trace.jsonl", "--at", "2", "--name", "c2", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr

    def poison(manifest: dict[str, object]) -> None:
        contract = manifest["contract"]
        assert isinstance(contract, dict)
        contract["evil" + HOSTILE] = "value" + HOSTILE
        contract["packages.evil" + HOSTILE] = "1.0" + HOSTILE  # a drift verify reports
        lineage = manifest.get("lineage")
        if isinstance(lineage, dict):
            lineage["source"] = "run" + HOSTILE

    edit_manifest(tmp_path / "fixtures" / "c2", poison)
    manifest = json.loads((tmp_path / "fixtures" / "c2" / "manifest.json").read_text())
    assert manifest["contract"]["evil" + HOSTILE] == "value" + HOSTILE
    for command in (("list",), ("show", "c2"), ("verify", "c2")):
        result = run_agentevals("resume", *command, cwd=tmp_path)
        out = result.stdout + result.stderr
        assert _unsafe(out) == [], (command, out)
        if command[0] != "list":
            assert "\\x1b[2J" in out, (command, out)


def test_a_resume_in_pytest_shows_what_the_fixture_holds_escaped(pytester: pytest.Pytester) -> None:
    """The report section, the drift warning and the ContractDrift failure of a pytest session."""
    from .. import resume_support as agent
    from .test_pytest import CONFTEST

    pytester.makepyfile(resume_support=Path(agent.__file__).read_text())
    pytester.makeconftest(CONFTEST)
    agent.make_fixture(pytester.path, continuation=True)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider --agentevals-history=off\n")

    def poison(manifest: dict[str, object]) -> None:
        contract = manifest["contract"]
        assert isinstance(contract, dict)
        contract["counter.schema"] = "2" + HOSTILE

    edit_manifest(pytester.path / "fixtures" / "counter-2", poison)
    pytester.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2")
        def test_fails(agentevals_resume):
            raise AssertionError("never reached")

        @pytest.mark.resume("counter-2", contract_policy="warn")
        def test_warns(agentevals_resume):
            assert agentevals_resume.run_agent() == {"done": 6}
        """
    )
    result = pytester.runpytest("-rA", "-W", "default::pytest_agentevals.contract.ContractDriftWarning")
    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    assert _unsafe(out) == [], out
    assert "ContractDrift: " in out  # the failure
    assert "- Captured agentevals resume call -" in out  # the report section
    assert "ContractDriftWarning: " in out  # the warning
    assert out.count("2\\x1b[2J") >= 3
