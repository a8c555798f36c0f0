"""`agentevals contract graph MODULE:ATTR`: the contract keys a LangGraph graph implies, as a recording
carries them, and their drift from a checkpoint fixture's (the check a resume test makes at boot)."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.cli import main
from pytest_agentevals.contract import flatten
from pytest_agentevals.resume import extract

pytest.importorskip("langgraph", reason="needs pytest-agentevals[langgraph]")

from langgraph.checkpoint.memory import InMemorySaver

from pytest_agentevals.adapters import graph_contract, import_thread

GRAPH = """
from typing import TypedDict

from langgraph.graph import START, StateGraph


class Count(TypedDict):
    done: int


builder = StateGraph(Count)
builder.add_node("work", lambda state: {{"done": state["done"] + 1}})
builder.add_edge(START, "work")
{more}
graph = builder.compile()


def make():
    return builder


answer = 42
"""
ONE_MORE = 'builder.add_node("check", lambda state: {})\nbuilder.add_edge("work", "check")'


MODULES = ("counting", "recorded", "changed", "broken", "nowhere")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder to run the command in; the modules it imports from there are forgotten afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    for name in MODULES:
        sys.modules.pop(name, None)


def module(folder: Path, name: str, more: str = "") -> Any:
    (folder / f"{name}.py").write_text(textwrap.dedent(GRAPH.format(more=more)))
    sys.path.insert(0, str(folder))
    return __import__(name)


def run(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str, str]:
    code = main(list(words))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_keys_a_recording_carries_are_printed(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    declared = graph_contract(module(project, "counting").graph)
    code, out, _ = run(capsys, "contract", "graph", "counting:graph")
    assert code == 0
    assert out.splitlines() == [f"{key}  {value}" for key, value in sorted(flatten(declared).items())]
    code, out, _ = run(capsys, "contract", "graph", "counting:graph", "--json")
    assert (code, json.loads(out)) == (0, declared)  # what a pytest_agentevals_contract() hook returns
    # A StateGraph is compiled, a function of no arguments called: the same graph, the same keys.
    for attr in ("builder", "make"):
        code, out, _ = run(capsys, "contract", "graph", f"counting:{attr}", "--json")
        assert (code, json.loads(out)) == (0, declared)


def test_the_drift_from_a_fixture_is_the_one_a_resume_boot_finds(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = module(project, "recorded").graph
    saver = InMemorySaver()
    graph.builder.compile(checkpointer=saver).invoke({"done": 0}, {"configurable": {"thread_id": "t"}})
    import_thread(saver, "t", project / "t.trace.jsonl", contract=graph_contract(graph))
    extract(project / "t.trace.jsonl", "latest", "counted", project / "fixtures")
    import_thread(saver, "t", project / "bare.trace.jsonl")  # recorded without the graph's keys
    extract(project / "bare.trace.jsonl", "latest", "bare", project / "fixtures")

    code, out, _ = run(capsys, "contract", "graph", "recorded:graph", "--fixture", "counted")
    assert (code, out.strip()) == (0, "counted: the graph's 2 contract key(s) match the recorded ones")

    module(project, "changed", more=ONE_MORE)
    code, out, _ = run(capsys, "contract", "graph", "changed:graph", "--fixture", "counted")
    assert code == 1
    assert "counted: the graph's contract drifted:" in out
    (row,) = [line for line in out.splitlines() if line.strip().startswith("langgraph.graph")]
    assert row.split("|")[1].strip() == graph_contract(graph)["langgraph"]["graph"]
    assert row.split("|")[3].strip() == "changed"
    code, out, _ = run(capsys, "contract", "graph", "changed:graph", "--fixture", "counted", "--json")
    assert code == 1
    assert [d["key"] for d in json.loads(out)["drift"]] == ["langgraph.graph"]
    tolerated = ("--contract-tolerate", "langgraph.graph")
    code, out, _ = run(capsys, "contract", "graph", "changed:graph", "--fixture", "counted", *tolerated)
    assert code == 0
    assert "changed (tolerated)" in out

    code, out, _ = run(capsys, "contract", "graph", "changed:graph", "--fixture", "bare")
    assert code == 0
    assert out.strip() == "bare: its contract holds none of the graph's keys (recorded without them)"


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("counting", "'counting': name the graph as MODULE:ATTR, e.g. my_agent.graph:graph"),
        ("nowhere:graph", "'nowhere:graph': cannot import nowhere (No module named 'nowhere')"),
        ("counting:nope", "'counting:nope': counting has no nope"),
        ("counting:answer", "'counting:answer' is a int, not a LangGraph graph"),
        ("broken:graph", "'broken:graph': importing broken raised RuntimeError: no database"),
    ],
)
def test_bad_input_is_one_error_naming_what_to_fix(
    project: Path, capsys: pytest.CaptureFixture[str], where: str, said: str
) -> None:
    module(project, "counting")
    (project / "broken.py").write_text("raise RuntimeError('no database')\n")
    code, out, err = run(capsys, "contract", "graph", where)
    assert (code, out) == (2, "")
    assert err.startswith(f"agentevals contract: error: {said}")
    assert len(err.strip().splitlines()) == 1
