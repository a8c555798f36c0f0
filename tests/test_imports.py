"""No import cycles inside pytest_agentevals, imports inside functions included; and what loading
the plugin imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_agentevals"

# No cycle is tolerated.
KNOWN: set[frozenset[str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (anywhere in its body)."""
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        base = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = base.split(".")[: len(base.split(".")) - (node.level - 1)]
                    module = ".".join([*parts, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rsplit(".", 1)[0] if "." in target else ""
                # A module importing its own package's __init__ (or itself) is not an edge.
                if target and target != name and not name.startswith(target + "."):
                    edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module."""
    reach: dict[str, set[str]] = {}
    for start in edges:
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(edges[node])
        reach[start] = seen
    found: set[frozenset[str]] = set()
    for node in edges:
        component = frozenset({node} | {other for other in reach[node] if node in reach[other]})
        if len(component) > 1:
            found.add(component)
    return sorted(found, key=sorted)


def test_the_graph_holds_the_edges_it_should() -> None:
    edges = import_graph()
    assert "pytest_agentevals.cli.show" in edges["pytest_agentevals.cli"]
    assert "pytest_agentevals.settings" in edges["pytest_agentevals.plugin"]


def test_no_import_cycles() -> None:
    found = [sorted(c) for c in cycles(import_graph()) if c not in KNOWN]
    assert found == []


def test_loading_the_plugin_leaves_vcrpy_for_the_first_recording() -> None:
    # Every pytest session with the plugin installed loads it; vcrpy's stubs import a dozen HTTP
    # libraries, which only a recording or a replay needs.
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, pytest_agentevals.plugin; print(sorted({'vcr', 'requests'} & set(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"
