"""`agentevals contract graph MODULE:ATTR`: the contract keys a LangGraph graph implies
(`graph_contract`), as a recording of it carries them — and, with `--fixture NAME`, how they differ
from a checkpoint fixture's recorded contract.

`MODULE:ATTR` is imported from the working directory as `python -m` imports it (it runs that module:
your own code, as `agentevals record` runs your program); ATTR is a compiled graph, a `StateGraph`
(compiled here, with no checkpointer), or a function of no arguments returning either.

- text: one `key  value` line per key, flattened with dots as a fixture's manifest and a drift table
  name them (`langgraph.graph`, `langgraph.tools.NODE.TOOL`);
- json: the nested dict `graph_contract(graph)` returns, what `Recorder(contract=...)` and a
  `pytest_agentevals_contract()` hook take;
- `--fixture NAME`: the drift table of the fixture's recorded `langgraph.*` keys against the graph's
  now (a key the graph lost reads `(absent)`), compared as a `@pytest.mark.resume` test declaring the
  graph's contract compares them at boot, `contract_tolerate` applied. Exit 1 on a drift it does
  not tolerate.

Exit codes: 0 ok, 1 a drift from the fixture, 2 bad input (an import that fails, not a graph...).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..contract import declared_shown, drift_shown, tolerances
from ..errors import AgentEvalsError
from ..resume import open_fixture
from ..trace.terminal import safe
from .common import add_format, add_setting, named_object, settings_of

PREFIX = "langgraph."  # the keys graph_contract declares, flattened


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "contract",
        help="the environment contract a graph implies, and its drift from a fixture",
        description="Contract keys a harness declares, worked out from its code (docs/frameworks.md). "
        "Exit codes: 0 ok, 1 drift from --fixture, 2 bad input.",
    )
    commands = parser.add_subparsers(dest="contract_command", metavar="KIND", required=True)
    graph = commands.add_parser(
        "graph",
        help="a LangGraph graph's contract keys (graph_contract), as a recording carries them",
        description="Import MODULE:ATTR (a compiled LangGraph graph, a StateGraph, or a function of no "
        "arguments returning one) from the working directory and print graph_contract(graph): the "
        "hash of its nodes and edges and of each tool node's tool schemas. With --fixture, compare "
        "them with that checkpoint fixture's recorded langgraph.* keys and exit 1 on a drift.",
    )
    graph.add_argument("graph", metavar="MODULE:ATTR", help="where the graph is, e.g. my_agent.graph:graph")
    graph.add_argument(
        "--fixture",
        metavar="NAME",
        help="a checkpoint fixture (a name under FIXTURES_DIR, or its folder) to compare the keys with",
    )
    add_setting(graph, "fixtures_dir", metavar="DIR")
    add_setting(graph, "contract_tolerate", metavar="KEY[:LEVEL],...")
    add_format(graph, ("text", "json"))
    graph.set_defaults(func=run_graph)


def run_graph(args: argparse.Namespace) -> int:
    try:
        from ..adapters import graph_contract  # imports LangGraph: only for this command
    except ImportError as exc:
        raise AgentEvalsError(
            f"reading a graph's contract needs LangGraph ({exc}): pip install 'pytest-agentevals[langgraph]'"
        ) from None

    declared = graph_contract(load_graph(args.graph))
    if args.fixture is None:
        print(declared_shown(declared, args.format))
        return 0
    settings = settings_of(args)
    fixture = open_fixture(args.fixture, settings.fixtures_dir, Path.cwd())
    recorded = [key for key in fixture.contract if key.startswith(PREFIX)]
    # The boot's own comparison (the fixture's recorded keys against the graph's now), these keys only.
    tolerate = tolerances("contract_tolerate", settings.contract_tolerate)
    drifts = [drift for drift in fixture.drift(declared, tolerate) if drift.key.startswith(PREFIX)]
    print(safe(drift_shown(fixture.name, declared, drifts, len(recorded), "the graph's", args.format)))
    return 1 if any(not drift.tolerated for drift in drifts) else 0


def load_graph(where: str) -> Any:
    """The compiled graph `MODULE:ATTR` names (see the module); AgentEvalsError saying what to fix."""
    how = "name the graph as MODULE:ATTR, e.g. my_agent.graph:graph"
    found = named_object(where, repr(where), how, AgentEvalsError)
    attr = where.partition(":")[2]
    if not _is_graph(found) and not hasattr(found, "compile") and callable(found):
        try:
            found = found()
        except Exception as exc:
            raise AgentEvalsError(f"{where!r}: calling {attr}() raised {type(exc).__name__}: {exc}") from exc
    if not _is_graph(found) and callable(getattr(found, "compile", None)):
        found = found.compile()
    if not _is_graph(found):
        raise AgentEvalsError(
            f"{where!r} is a {type(found).__name__}, not a LangGraph graph: name a compiled graph, a "
            "StateGraph, or a function of no arguments returning one"
        )
    return found


def _is_graph(value: Any) -> bool:
    return callable(getattr(value, "get_graph", None)) and isinstance(getattr(value, "nodes", None), dict)
