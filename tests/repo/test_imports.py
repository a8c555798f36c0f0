"""DESIGN.md's import rules, checked: no cycle between modules (imports inside functions included) or
between packages; engines never import a face; pytest only in the faces; the low packages import
nothing above them; and what loading the plugin imports."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_agentevals"

# No cycle is tolerated.
KNOWN: set[frozenset[str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def import_statements(path: Path) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """Every `import` statement of the file, anywhere in its body. Parsed once for the session: the
    rules below each read them, and walking the package's trees took a second or more a rule."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return tuple(node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom))


@functools.cache
def _import_graph() -> dict[str, frozenset[str]]:
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        base = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in import_statements(path):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    parts = base.split(".")[: len(base.split(".")) - (node.level - 1)]
                    module = ".".join([*parts, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            for target in targets:
                while target and target not in modules:
                    target = target.rsplit(".", 1)[0] if "." in target else ""
                # A module importing its own package's __init__ (or itself) is not an edge.
                if target and target != name and not name.startswith(target + "."):
                    edges[name].add(target)
    return {name: frozenset(targets) for name, targets in edges.items()}


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (anywhere in its body): built once for the
    session, and a fresh copy for each caller, which may change it (the rules' own test does)."""
    return {name: set(targets) for name, targets in _import_graph().items()}


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


# The faces: the top-level entry point, the shared pytest glue, the hookspecs, the public API, every
# layer's plugin.py and the command line. Everything else is an engine module.
FACE_MODULES = {"pytest_agentevals", "pytest_agentevals.__main__", "pytest_agentevals.plugin",
                "pytest_agentevals.faces", "pytest_agentevals.hooks"}  # fmt: skip
# The only modules that may import pytest: the entry point, the glue, and each layer's face.
PYTEST_ALLOWED = {"pytest_agentevals.plugin", "pytest_agentevals.faces"}

# What each low package may import of ours (besides itself); DESIGN.md's arrows, pointing down.
# (`_lazy` is how a package's public names load on first use: every package may import it.)
MAY_IMPORT = {
    "errors": set(),
    "fileio": {"errors"},  # LinkRefused: errors.py imports nothing, so no cycle
    "_lazy": set(),
    # The PostgreSQL plumbing the history and the day ledger share (psycopg imported lazily there).
    "pg": {"errors", "settings"},
    "trace": {"errors", "fileio", "_lazy"},
    "settings": {"errors", "_lazy"},
    "contract": {"errors", "settings", "trace", "_lazy"},
    "metrics": {"errors", "trace", "_lazy"},
    "sim": {"errors", "trace", "_lazy"},
    "history": {"errors", "fileio", "pg", "settings", "trace", "_lazy"},
}


def is_face(module: str) -> bool:
    return (
        module in FACE_MODULES
        or module.endswith(".plugin")
        or module == "pytest_agentevals.cli"
        or module.startswith("pytest_agentevals.cli.")
    )


def package_of(module: str) -> str:
    """An engine module's package (`replay`, `trace`...) or top-level module (`errors`); a face
    stands for itself: a layer's face sits above every engine, its own included."""
    if is_face(module):
        return module
    return module.split(".")[1]


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for source, targets in edges.items():
        node = package_of(source)
        graph.setdefault(node, set())
        for target in targets:
            if package_of(target) != node:
                graph[node].add(package_of(target))
    return graph


def imports_of(path: Path, name: str) -> list[str]:
    """Every module an `import` statement of the file names, ours or not, as written (absolute)."""
    found: list[str] = []
    for node in import_statements(path):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append(node.module)
    return found


def engine_violations(edges: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{source} imports the face {target}"
        for source, targets in edges.items()
        if not is_face(source)
        for target in targets
        if is_face(target)
    )


def pytest_violations() -> list[str]:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if name in PYTEST_ALLOWED or name.endswith(".plugin"):
            continue
        for imported in imports_of(path, name):
            if imported.split(".")[0] in {"pytest", "_pytest"}:
                bad.append(f"{name} imports {imported}")
    return bad


def layering_violations(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{low} imports {target}"
        for low, allowed in MAY_IMPORT.items()
        for target in graph.get(low, set())
        if target not in allowed
    )


def test_the_graph_holds_the_edges_it_should() -> None:
    edges = import_graph()
    assert "pytest_agentevals.cli.show" in edges["pytest_agentevals.cli"]
    assert "pytest_agentevals.settings" in edges["pytest_agentevals.plugin"]


def test_no_import_cycles() -> None:
    found = [sorted(c) for c in cycles(import_graph()) if c not in KNOWN]
    assert found == []


def test_no_cycles_between_packages() -> None:
    assert [sorted(c) for c in cycles(package_graph(import_graph()))] == []


def test_engines_never_import_a_face_or_the_command_line() -> None:
    assert engine_violations(import_graph()) == []


def test_pytest_is_imported_only_by_the_faces_and_the_glue() -> None:
    assert pytest_violations() == []


def test_the_low_packages_import_nothing_above_them() -> None:
    assert layering_violations(package_graph(import_graph())) == []


def test_the_rules_catch_what_they_forbid() -> None:
    # Each rule, shown a graph that breaks it, says so (a rule that cannot fail checks nothing).
    edges = import_graph()
    edges["pytest_agentevals.trace.reader"] = {*edges["pytest_agentevals.trace.reader"],
                                               "pytest_agentevals.replay.plugin"}  # fmt: skip
    assert engine_violations(edges) == [
        "pytest_agentevals.trace.reader imports the face pytest_agentevals.replay.plugin"
    ]
    assert "trace imports pytest_agentevals.replay.plugin" in layering_violations(package_graph(edges))
    edges = import_graph()
    edges["pytest_agentevals.metrics.run"] = {
        *edges["pytest_agentevals.metrics.run"],
        "pytest_agentevals.step.case",
    }
    edges["pytest_agentevals.step.case"] = {
        *edges["pytest_agentevals.step.case"],
        "pytest_agentevals.metrics.run",
    }
    assert any({"metrics", "step"} <= c for c in cycles(package_graph(edges)))


def test_the_engines_load_without_pytest() -> None:
    # The engines work from plain Python and the command line: importing every one of them (and the
    # public API) leaves pytest unloaded.
    engines = sorted(name for name in import_graph() if not is_face(name) or name == "pytest_agentevals")
    code = (
        "import importlib, sys\n"
        f"for name in {engines!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in ('pytest', '_pytest') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_loading_the_plugin_leaves_the_engines_for_their_first_use() -> None:
    # Every pytest session with the plugin installed loads it: what only a recording, a replay, a
    # resume, the history's store or a report needs loads with its first use. (pytest itself may load
    # some of these; a bare `import pytest` is the baseline.)
    heavy = [
        "vcr", "requests", "yaml", "sqlite3", "tarfile", "ssl", "asyncio", "junitparser", "anthropic",
        "psycopg", "langchain_core", "langgraph", "pydantic_ai",
    ]  # fmt: skip
    code = (
        "import sys\n"
        "import pytest\n"
        f"before = {{m for m in {heavy!r} if m in sys.modules}}\n"
        "import pytest_agentevals.plugin\n"
        f"print(sorted({{m for m in {heavy!r} if m in sys.modules}} - before))\n"
        "print(sorted(m for m in sys.modules if m.startswith('pytest_agentevals.') and "
        "m.rsplit('.', 1)[-1] in ('engine', 'recorder', 'session', 'sqlite', 'archive', 'html')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.splitlines() == ["[]", "[]"]


def test_every_public_name_loads_from_the_module_it_names() -> None:
    # A package's `if TYPE_CHECKING:` imports are its public names (`_lazy.attach` reads them): each
    # is in `__all__` and back, each resolves to its module's object, and none is also the name of a
    # submodule (importing that submodule would bind the package attribute to the module).
    code = """
import importlib, json, pkgutil, sys
import pytest_agentevals
from pytest_agentevals._lazy import homes
problems = []
for info in [None, *pkgutil.walk_packages(pytest_agentevals.__path__, "pytest_agentevals.")]:
    name = "pytest_agentevals" if info is None else info.name
    if info is not None and not info.ispkg:
        continue
    package = importlib.import_module(name)
    table = homes(name, package.__file__)
    if not table:
        continue
    exported = set(getattr(package, "__all__", [])) - {"__version__"}
    if exported != set(table):
        problems.append(f"{name}: __all__ and TYPE_CHECKING differ: {sorted(exported ^ set(table))}")
    submodules = {sub.name for sub in pkgutil.iter_modules(package.__path__)}
    for public, home in table.items():
        if public in submodules:
            problems.append(f"{name}.{public} is a public name and a submodule")
        if getattr(package, public) is not getattr(importlib.import_module(home), public):
            problems.append(f"{name}.{public} is not {home}.{public}")
print(json.dumps(problems))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
