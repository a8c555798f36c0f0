"""`agentevals replay`, `promote` and `scan` as a user runs them: subprocesses, offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pytest_agentevals as ae

from .. import replay_support as agent
from ..conftest import run_agentevals as agentevals

SCRIPT = """
import sys
import replay_support as agent

print(agent.run_agent(agent.client(), sys.argv[1]))
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder with the sample agent, a script running it, and a recorded run of it."""
    (tmp_path / "replay_support.py").write_text(Path(agent.__file__).read_text())
    (tmp_path / "fix_it.py").write_text(SCRIPT)
    agent.record(tmp_path / "run.trace.jsonl")
    return tmp_path


def test_replay_runs_a_script_offline(folder: Path) -> None:
    result = agentevals("replay", "run.trace.jsonl", "fix_it.py", "Fix the bug in a.txt", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Fixed: add() now adds.\n"
    assert result.stderr.splitlines()[-1] == (
        "replayed run.trace.jsonl (strict): served 4 of 4 recorded HTTP exchanges, 3 of 3 tool calls; "
        "no divergence"
    )


def test_a_divergence_ends_the_replay_with_exit_1_and_the_diff(folder: Path) -> None:
    result = agentevals("replay", "run.trace.jsonl", "fix_it.py", "Fix the bug in b.txt", cwd=folder)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == (
        "agentevals replay: ReplayDivergence: replay diverged at model call 1 of the run: the request "
        "differs from recorded model call 1 (step 1, line 2) of run.trace.jsonl in message 0 (user), "
        "field content"
    )
    assert lines[1:4] == [
        "  messages[0].content:",
        "    recorded: 'Fix the bug in a.txt'",
        "    now:      'Fix the bug in b.txt'",
    ]
    assert "Traceback" not in result.stderr
    # The summary agrees with the verdict: it names the failure, never "no divergence".
    assert lines[-1] == (
        "replayed run.trace.jsonl (strict): served 0 of 4 recorded HTTP exchanges, 0 of 3 tool calls; "
        "failed: ReplayDivergence: replay diverged at model call 1 of the run: the request differs from "
        "recorded model call 1 (step 1, line 2) of run.trace.jsonl in message 0 (user), field content"
    )


def test_a_stale_cassette_is_in_the_summary_too(folder: Path) -> None:
    trace = folder / "run.trace.jsonl"
    trace.write_text(trace.read_text().replace('"anthropic":"', '"anthropic":"0.0.1-', 1))
    result = agentevals("replay", "run.trace.jsonl", "fix_it.py", "Fix the bug in a.txt", cwd=folder)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith(
        "replayed run.trace.jsonl (strict): served 0 of 4 recorded HTTP exchanges, 0 of 3 tool calls; "
        "failed: StaleCassette: run.trace.jsonl: the cassette is stale"
    )


def test_the_replayed_run_is_recorded_with_the_configured_prices_and_packages(folder: Path) -> None:
    (folder / "pyproject.toml").write_text(
        "[tool.agentevals]\ncontract_packages = ['anthropic', 'pytest']\n"
        f"[tool.agentevals.prices.{agent.MODEL}]\ninput = 1000\noutput = 1000\n"
    )
    result = agentevals(
        "replay", "run.trace.jsonl", "-o", "out.trace.jsonl", "fix_it.py", "Fix the bug in a.txt", cwd=folder
    )
    assert result.returncode == 0, result.stderr
    events = ae.read_trace(folder / "out.trace.jsonl")
    assert events[0]["contract"]["packages"]["pytest"] == pytest.__version__
    assert events[-1]["totals"]["cost_usd"] > 0


def test_sequential_replay_reports_and_records_the_replayed_run(folder: Path) -> None:
    result = agentevals(
        "replay",
        "run.trace.jsonl",
        "--mode",
        "sequential",
        "-o",
        "out.trace.jsonl",
        "fix_it.py",
        "Fix b.txt",
        cwd=folder,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "replayed run.trace.jsonl (sequential): served 4 of 4 recorded HTTP exchanges, 3 of 3 tool calls; "
        "4 divergence(s)" in result.stderr
    )
    notes = [e for e in ae.read_trace(folder / "out.trace.jsonl") if e["type"] == "note"]
    assert [n["message"] for n in notes] == ["replay divergence"] * 4


def test_replaying_a_missing_trace_names_it(folder: Path) -> None:
    result = agentevals("replay", "nope.trace.jsonl", "fix_it.py", "x", cwd=folder)
    assert result.returncode == 2
    assert result.stderr == (
        "agentevals replay: error: nope.trace.jsonl: no such cassette (record it: pytest "
        "--agentevals-record=once, or `agentevals record`; or check the name)\n"
    )


def test_a_run_recorded_by_agentevals_record_replays(folder: Path) -> None:
    with agent.sim() as server:
        script = folder / "live.py"
        script.write_text(SCRIPT.replace("agent.client()", f"agent.client({server.url!r})"))
        recorded = agentevals(
            "record", "-o", "rec.trace.jsonl", "live.py", "Fix the bug in a.txt", cwd=folder
        )
    assert recorded.returncode == 0, recorded.stderr
    result = agentevals("replay", "rec.trace.jsonl", "fix_it.py", "Fix the bug in a.txt", cwd=folder)
    assert result.returncode == 0, result.stderr


# -- promote -------------------------------------------------------------------------------------------


def fake_key() -> str:
    return "sk-ant-" + "api03-" + "leaked" + "K" * 30


def test_promote_copies_scrubbed_and_writes_a_test_that_passes(
    folder: Path, pytester: pytest.Pytester
) -> None:
    trace = folder / "run.trace.jsonl"
    lines = trace.read_text().splitlines(keepends=True)
    lines[0] = lines[0].replace('"agent":"toolbox"', f'"agent":"toolbox","owner_key":"{fake_key()}"')
    trace.write_text("".join(lines))
    (folder / "pyproject.toml").write_text("[tool.agentevals]\ncassettes_dir = 'cassettes'\n")
    result = agentevals("promote", "run.trace.jsonl", "--name", "incident-1", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"agentevals promote: wrote {folder / 'cassettes' / 'incident-1.trace.jsonl'} "
        "(9 events, 1 secret(s) scrubbed)",
        "agentevals promote: wrote tests/test_replay_incident_1.py",
    ]
    promoted = (folder / "cassettes" / "incident-1.trace.jsonl").read_text()
    assert fake_key() not in promoted
    assert '"owner_key":"[REDACTED]"' in promoted
    test = (folder / "tests" / "test_replay_incident_1.py").read_text()
    assert "@pytest.mark.replay('incident-1', replay_mode='strict')" in test

    # The written test replays the incident through the conftest runner.
    pytester.makepyfile(replay_support=Path(agent.__file__).read_text())
    pytester.makeconftest(
        "import replay_support as agent\n\n"
        "def pytest_agentevals_run_agent(run):\n"
        "    return agent.run_agent(agent.client(), run.task)\n"
    )
    (pytester.path / "cassettes").mkdir()
    (pytester.path / "cassettes" / "incident-1.trace.jsonl").write_text(promoted)
    pytester.makepyfile(test_replay_incident_1=test)
    pytester.runpytest().assert_outcomes(passed=1)


def test_promote_closes_a_run_cut_off_mid_write(folder: Path) -> None:
    trace = folder / "run.trace.jsonl"
    lines = trace.read_text().splitlines(keepends=True)
    trace.write_text("".join([*lines[:-2], lines[-2][:30]]))  # killed while writing event 8
    result = agentevals("promote", "run.trace.jsonl", "--name", "crash", "--no-test", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert "(7 events, closed as interrupted)" in result.stdout
    events = ae.read_trace(folder / "cassettes" / "crash.trace.jsonl")
    assert events[-1]["type"] == "run_end"
    assert events[-1]["status"] == "interrupted"


def test_promote_puts_everything_under_the_project_root_from_any_folder(folder: Path) -> None:
    (folder / "pyproject.toml").write_text("[tool.agentevals]\nreplay_mode = 'sequential'\n")
    (folder / "incidents").mkdir()
    (folder / "run.trace.jsonl").rename(folder / "incidents" / "run.trace.jsonl")
    result = agentevals(
        "promote",
        "run.trace.jsonl",
        "--name",
        "i-2",
        "--cassettes-dir",
        "regressions",
        cwd=folder / "incidents",
    )
    assert result.returncode == 0, result.stderr
    assert (folder / "regressions" / "i-2.trace.jsonl").is_file()  # the rootdir's, not the cwd's
    test = (folder / "tests" / "test_replay_i_2.py").read_text()
    assert "@pytest.mark.replay('i-2', replay_mode='sequential')" in test  # the configured mode
    assert sorted(p.name for p in (folder / "incidents").iterdir()) == ["run.trace.jsonl"]


def test_promote_never_replaces_a_cassette_unasked(folder: Path) -> None:
    assert agentevals("promote", "run.trace.jsonl", "--name", "same", "--no-test", cwd=folder).returncode == 0
    again = agentevals("promote", "run.trace.jsonl", "--name", "same", "--no-test", cwd=folder)
    assert again.returncode == 2
    assert again.stderr == (
        f"agentevals promote: error: {folder / 'cassettes' / 'same.trace.jsonl'} exists: choose another "
        "--name, or --force to replace it\n"
    )


# -- scan ----------------------------------------------------------------------------------------------


def test_scan_finds_key_patterns_and_secret_variable_values(tmp_path: Path) -> None:
    (tmp_path / "a.trace.jsonl").write_text('{"x": 1}\n' + json.dumps({"key": fake_key()}) + "\n")
    (tmp_path / "b.yaml").write_text("headers:\n  x-custom: hunter2-but-longer\n")
    result = agentevals("scan", ".", cwd=tmp_path, env={"MY_SERVICE_TOKEN": "hunter2-but-longer"})
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "a.trace.jsonl:2: API-key pattern (49 characters)",
        "b.yaml:2: the value of $MY_SERVICE_TOKEN (18 characters)",
    ]
    assert result.stderr.startswith("agentevals scan: 2 secret-shaped value(s) in 2 file(s) scanned.")


def test_scan_passes_clean_files(tmp_path: Path) -> None:
    agent.record(tmp_path / "clean.trace.jsonl")  # the recorder scrubbed the SDK's key
    result = agentevals("scan", str(tmp_path), cwd=tmp_path, env={"ANTHROPIC_API_KEY": agent.fake_key()})
    assert result.returncode == 0, result.stdout
    assert result.stderr == "agentevals scan: no secrets in 1 file(s)\n"


def test_the_repositorys_own_cassettes_hold_no_secret(repo_root: Path) -> None:
    result = agentevals("scan", "cassettes", "goldens", cwd=repo_root)
    assert result.returncode == 0, result.stdout
