"""`claude -p` under the replay layer, in real pytest runs: a test hands the CLI the
`agentevals_endpoint` fixture's env; `--agentevals-record=once` records it against sim, and the next
run replays it offline, in the test's own (new) folder, with the profile's folds in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentevals.sim import SimServer

from ..clients_support import claude_command, client_env

pytest_plugins = ["pytester"]


def test_claude_code_is_recorded_then_replayed_by_the_replay_layer(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, model: SimServer, tmp_path: Path
) -> None:
    command = claude_command("write hello.txt")
    for name, value in client_env(model.url, tmp_path / "home").items():
        monkeypatch.setenv(name, value)  # ANTHROPIC_BASE_URL: the endpoint's upstream while recording
    pytester.makeini("[pytest]\naddopts = --agentevals-collect-cassettes=false\n")
    pytester.makepyfile(
        test_cli=f"""
        import subprocess, tempfile
        from pathlib import Path
        import pytest

        @pytest.mark.replay("claude")
        def test_cli(agentevals_replay, agentevals_endpoint, tmp_path):
            work = Path(tempfile.mkdtemp(dir=tmp_path))  # another folder in each run
            done = subprocess.run({command!r}, env=agentevals_endpoint.env, cwd=work,
                                  capture_output=True, text=True, stdin=subprocess.DEVNULL)
            assert done.returncode == 0, done.stdout + done.stderr
            assert (work / "hello.txt").exists()
        """
    )
    before = len(model.exchanges)
    pytester.runpytest("--agentevals-record=once").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "claude.trace.jsonl"
    events = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert [e["type"] for e in events].count("model_call") == 2
    assert len(model.exchanges) - before == 2
    replayed = pytester.runpytest("-rA")
    assert len(model.exchanges) - before == 2  # the replay went nowhere
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(
        [
            "*served 2 of 2 recorded HTTP exchanges; no divergence; * volatile text(s) folded by the "
            "claude-code profile (claude-code *)",
            "  cwd (claude-code profile): 2 text(s) in 2 request(s); 2 differed from the recording; *",
        ]
    )
