"""The run report is never written through a link (issue 17): a committed symbolic link on the way
to the page (`reports -> /somewhere/else`) is refused naming it, and nothing is created at its
target — not the page, not a folder — from `agentevals report` and from a pytest session."""

from __future__ import annotations

from pathlib import Path

import pytest

from .. import replay_support as agent
from ..conftest import run_agentevals

pytest_plugins = ["pytester"]


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("outside")


def test_agentevals_report_makes_no_folder_through_a_linked_parent(tmp_path: Path, outside: Path) -> None:
    trace = agent.record(tmp_path / "run.trace.jsonl")
    (tmp_path / "reports").symlink_to(outside, target_is_directory=True)
    done = run_agentevals("report", trace, "-o", "reports/nightly/report.html", cwd=tmp_path)
    assert done.returncode != 0
    assert "reports: is a symbolic link (to " in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert list(outside.iterdir()) == []  # not even the folder `nightly`


def test_a_pytest_session_report_makes_no_folder_through_a_linked_parent(
    pytester: pytest.Pytester, outside: Path
) -> None:
    (pytester.path / ".agentevals").symlink_to(outside, target_is_directory=True)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest(
        "--agentevals-history=off", "--agentevals-report=.agentevals/pages/report.html"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["agentevals report: not written: */.agentevals: is a symbolic link (to *"])
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    ("first", "said"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 128 levels"),
        ('{"type": "run_start", "v": 1, "n": ' + "1" * 6000 + "}", "a number of thousands of digits"),
        ('{"type": "run_start", "v": 1, "pad": "' + "a" * (65 << 20) + '"}', "over 64 MiB"),
    ],
    ids=["deep", "huge number", "huge line"],
)
def test_a_deep_or_huge_first_line_is_one_clear_error(tmp_path: Path, first: str, said: str) -> None:
    (tmp_path / "x.trace.jsonl").write_text(first + "\n")
    done = run_agentevals("report", "x.trace.jsonl", "-o", "x.html", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("agentevals report: error: x.trace.jsonl: not a trace:"), done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "x.html").exists()
