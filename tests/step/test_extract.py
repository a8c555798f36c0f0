"""`agentevals step extract|points` on a recorded run: decision points found, contexts frozen, the
recorded decisions seeded, and the extracted cases passing offline at once."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest
import yaml

import pytest_agentevals
from pytest_agentevals import Recorder, read_trace
from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.step import load_goldens

from ..conftest import run_agentevals as agentevals

SYSTEM = "You fix files."
TOOLS = [{"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}}]
SCRIPT = [
    Reply.tool_use("read_file", {"path": "src/a.py"}),
    Reply.tool_uses([("read_file", {"path": "src/b.py"}), ("read_file", {"path": "src/c.py"})]),
    Reply.text("Summary: read src/a.py, src/b.py and src/c.py; next: fix src/a.py."),
    Reply.text("All done."),
]


def ask(client: anthropic.Anthropic, messages: list[dict[str, object]]) -> anthropic.types.Message:
    return client.messages.create(
        model="sim-1", max_tokens=100, system=SYSTEM, tools=TOOLS, messages=messages
    )  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small run: a tool choice, two parallel calls, a compaction by model call, a watchdog abort,
    a closing stop, and a run that ends escalated."""
    path = tmp_path_factory.mktemp("runs") / "fix.trace.jsonl"
    with SimServer(SCRIPT, seed=3) as sim, Recorder(path, agent="fixer", seed=3) as recorder:
        client = anthropic.Anthropic(base_url=sim.url, api_key="test-" + "k" * 12, max_retries=0)
        messages: list[dict[str, object]] = [{"role": "user", "content": "Fix src/a.py"}]
        for _ in range(2):
            reply = ask(client, messages)
            messages.append({"role": "assistant", "content": [b.to_dict() for b in reply.content]})
            results = [
                {"type": "tool_result", "tool_use_id": b.id, "content": "..."}
                for b in reply.content
                if b.type == "tool_use"
            ]
            messages.append({"role": "user", "content": results})
        summary = ask(
            client,
            [*messages[:-1], {"role": "user", "content": [*results, {"type": "text", "text": "COMPACT"}]}],
        )
        pytest_agentevals.compaction(tokens_before=900, tokens_after=40, summary=summary.content[0].text)  # type: ignore[union-attr]
        pytest_agentevals.note("watchdog fired", reason="same call 4 times", action="abort")
        ask(client, [{"role": "user", "content": "Fix src/a.py"}])
        recorder.end("escalated")
    return path


def test_points_lists_every_decision(trace: Path, tmp_path: Path) -> None:
    done = agentevals("step", "points", trace, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [line.split()[:2] for line in done.stdout.splitlines()[1:]]
    assert rows == [
        ["1", "tool_choice"],
        ["2", "trajectory"],
        ["3", "compaction"],
        ["3", "escalation"],
        ["4", "escalation"],
        ["4", "escalation"],
    ]
    assert "watchdog fired: yield (watchdog_fired)" in done.stdout
    assert "model call: stop (end_turn)" in done.stdout
    assert "run escalated: escalate (escalated)" in done.stdout


def test_extract_freezes_contexts_and_seeds_the_recorded_decisions(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "goldens" / "fix.yaml"
    done = agentevals(
        "step",
        "extract",
        trace,
        "--steps",
        "1-3",
        "--kind",
        "tool_choice",
        "--kind",
        "trajectory",
        "--kind",
        "compaction",
        "--output",
        out,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "wrote 3 step case(s)" in done.stdout
    assert done.stdout.count("step-") == 3
    goldens = load_goldens(out)
    assert [(case.id, case.kind) for case in goldens.cases] == [
        ("step-1-tool-choice", "tool_choice"),
        ("step-2-trajectory", "trajectory"),
        ("step-3-compaction", "compaction"),
    ]
    data = yaml.safe_load(out.read_text())
    assert data["defaults"]["request"]["system"] == SYSTEM  # shared request fields stated once
    assert "system" not in data["cases"][0]["context"]["request"]
    assert data["cases"][0]["expect"] == {"tool": "read_file", "args": {"path": "src/a.py"}}
    assert data["cases"][1]["expect"]["calls"][1] == {"tool": "read_file", "args": {"path": "src/c.py"}}
    assert data["cases"][2]["expect"]["keep"] == ["src/a.py", "src/b.py", "src/c.py"]
    assert data["cases"][0]["source"] == {"trace": str(trace), "step": 1, "line": 2}
    assert goldens.cases[0].request == read_trace(trace)[1]["request"]["body"]  # the context, frozen
    stored = read_trace(tmp_path / "goldens" / "fix.decisions.trace.jsonl")
    assert [event.get("case") for event in stored[1:-1]] == [
        "step-1-tool-choice",
        "step-2-trajectory",
        "step-3-compaction",
    ]


def test_extracted_cases_pass_offline_through_the_users_harness(
    trace: Path, pytester: pytest.Pytester
) -> None:
    out = pytester.path / "goldens" / "fix.yaml"
    done = agentevals("step", "extract", trace, "--steps", "1-3", "--output", out, cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    (pytester.path / "goldens" / "conftest.py").write_text(
        f"""
import anthropic, pytest
from pytest_agentevals.step import Decision

@pytest.fixture
def agentevals_decide():
    client = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="test-" + "k" * 12, max_retries=0)
    def decide(case):
        if case.state and "trigger" in case.state:
            return Decision.escalate("watchdog_fired", action="yield")
        return client.messages.create(model="sim-1", max_tokens=100, system={SYSTEM!r},
                                      tools={TOOLS!r}, messages=case.messages)
    return decide
"""
    )
    result = pytester.runpytest("-p", "no:hypothesispytest", "goldens", "-m", "step", "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["goldens/fix.yaml::step-3-escalation PASSED*"])


def test_asking_for_nothing_there_lists_what_is(trace: Path, tmp_path: Path) -> None:
    done = agentevals("step", "extract", trace, "--steps", "40", "-o", tmp_path / "x.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "has no decision point at the steps and kinds asked for" in done.stderr
    assert "its decision points are at steps: 1 (tool_choice), 2 (trajectory), 3 (compaction)" in done.stderr
    nothing = agentevals("step", "extract", trace, cwd=tmp_path)
    assert nothing.returncode == 2
    assert "say which decisions to take: --steps 12,40 and/or --kind" in nothing.stderr


def test_an_existing_file_needs_append(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "goldens" / "fix.yaml"
    assert agentevals("step", "extract", trace, "--steps", "1", "--output", out, cwd=tmp_path).returncode == 0
    again = agentevals("step", "extract", trace, "--steps", "1", "--output", out, cwd=tmp_path)
    assert again.returncode == 2
    assert "exists already (pass --append to add the cases to it" in again.stderr
    out.write_text(out.read_text().replace("scenario: fix", "# hand edit\nscenario: fix"))
    everything = agentevals(
        "step",
        "extract",
        trace,
        "--kind",
        "escalation",
        "--kind",
        "tool_choice",
        "--output",
        out,
        "--append",
        cwd=tmp_path,
    )
    assert everything.returncode == 0, everything.stderr
    cases = [case.id for case in load_goldens(out).cases]
    assert cases == [
        "step-1-tool-choice",
        "step-1-tool-choice-2",
        "step-3-escalation",
        "step-4-escalation",
        "step-4-escalation-2",
    ]
    assert "# hand edit" in out.read_text()
