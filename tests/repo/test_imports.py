"""DESIGN.md's import rules, checked at module and at folder level: no cycle between modules (imports
inside functions included) or between folders (a layer's `plugin.py` counted in its folder, so a face
cannot hide a loop); engines never import a face; pytest only in the faces and the shared glue; each
folder imports only what the table below allows (every folder of the package is in it); layers meet
only through each other's public names; and what loading the plugin imports. Each rule is shown a
graph that breaks it, and must say so."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Iterable
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
def deprecated_targets(path: Path) -> tuple[str, ...]:
    """The modules a package's deprecated names load by name (`attach(..., deprecated={"Old":
    "module:attr"})`): imports made by a string, counted as edges like any other."""
    if path.name != "__init__.py":
        return ()
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "attach":
            for keyword in node.keywords:
                if keyword.arg == "deprecated" and isinstance(keyword.value, ast.Dict):
                    for value in keyword.value.values:
                        if isinstance(value, ast.Constant) and ":" in str(value.value):
                            found.append(str(value.value).split(":", 1)[0])
    return tuple(found)


@functools.cache
def _modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def _absolute(node: ast.ImportFrom, name: str, path: Path) -> str:
    base = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    if not node.level:
        return node.module or ""
    parts = base.split(".")[: len(base.split(".")) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


@functools.cache
def _import_graph() -> dict[str, frozenset[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in import_statements(path):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                module = _absolute(node, name, path)
                targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            for target in [*targets, *deprecated_targets(path)]:
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
    """The strongly connected components of more than one node."""
    reach: dict[str, set[str]] = {}
    for start in edges:
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
        reach[start] = seen
    found: set[frozenset[str]] = set()
    for node in edges:
        component = frozenset({node} | {other for other in reach[node] if node in reach.get(other, ())})
        if len(component) > 1:
            found.add(component)
    return sorted(found, key=sorted)


# The faces: the top-level entry point, the shared pytest glue (marker specs, the run lifecycle's
# pytest side), the hookspecs, the public API, every layer's plugin.py and the command line.
# Everything else is an engine module.
GLUE = {"pytest_agentevals.markers", "pytest_agentevals.runs"}
FACE_MODULES = {"pytest_agentevals", "pytest_agentevals.__main__", "pytest_agentevals.plugin",
                "pytest_agentevals.hooks", *GLUE}  # fmt: skip
# The only modules that may import pytest: the entry point, the glue, and each package's face.
PYTEST_ALLOWED = {"pytest_agentevals.plugin", *GLUE}


def is_face(module: str) -> bool:
    return (
        module in FACE_MODULES
        or module.endswith(".plugin")
        or module == "pytest_agentevals.cli"
        or module.startswith("pytest_agentevals.cli.")
    )


def folder_of(module: str) -> str:
    """The folder (package) or top-level module a module belongs to: `replay` for every module of
    `replay/`, its face included; `__init__` for the package's own `__init__.py`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def folder_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for source, targets in edges.items():
        node = folder_of(source)
        graph.setdefault(node, set())
        graph[node] |= {folder_of(target) for target in targets} - {node}
    return graph


# What each folder may import of ours (besides itself), faces included: DESIGN.md's arrows, pointing
# down. `_lazy` is how a package's public names load on first use: every package may import it.
# A new arrow is a design decision: add it here, and to DESIGN.md, on purpose.
LOW = {"errors", "_lazy"}
MAY_IMPORT: dict[str, set[str]] = {
    "errors": set(),
    "stats": set(),
    "_lazy": {"errors"},
    "_moved": {"errors"},  # the finder of 0.1's moved module paths: it imports its targets by name
    "fileio": {"errors"},
    "settings": {"errors"},  # settings/plugin.py, the options' face, imports pytest and nothing of ours
    "pg": {"errors", "settings"},  # the PostgreSQL plumbing the history and the day ledger share
    "trace": {*LOW, "fileio"},
    "workspace": {*LOW, "fileio"},
    "sim": {*LOW, "trace"},
    "contract": {*LOW, "settings", "trace"},
    "metrics": {*LOW, "trace"},
    "markers": {"errors", "settings"},  # the shared pytest glue: generic, above settings only
    "guards": {*LOW, "fileio", "markers", "metrics", "pg", "settings", "trace"},
    "lifecycle": {"guards", "settings"},
    "hooks": {"errors", "lifecycle"},
    "runs": {"guards", "hooks", "lifecycle", "markers", "settings", "trace"},
    "history": {*LOW, "fileio", "markers", "pg", "settings", "stats", "trace"},
    "recording": {*LOW, "contract", "guards", "hooks", "lifecycle", "runs", "settings", "trace", "workspace"},
    "adapters": {*LOW, "recording", "trace"},  # and the frameworks: nothing else of ours imports one
    "replay": {
        *LOW,
        "contract",
        "fileio",
        "hooks",
        "lifecycle",
        "markers",
        "recording",
        "runs",
        "settings",
        "trace",
    },
    # Readers of other formats into traces, and the OTLP exporter: files in, traces out; no layer.
    "imports": {*LOW, "fileio", "trace"},
    # No pytest: the faces hand tests its URL. `resume` for a replayed command's recorded workspace
    # (endpoint/replayed.py restores it as a resume boots one); the resume engine never imports it.
    "endpoint": {*LOW, "recording", "replay", "resume", "settings", "trace"},
    "step": {*LOW, "contract", "fileio", "guards", "markers", "recording", "replay", "settings", "trace"},
    "resume": {
        *LOW,
        "contract",
        "fileio",
        "guards",
        "hooks",
        "lifecycle",
        "markers",
        "metrics",
        "recording",
        "replay",
        "runs",
        "settings",
        "trace",
        "workspace",
    },
    "marathon": {
        *LOW,
        "fileio",
        "history",
        "hooks",
        "lifecycle",
        "markers",
        "metrics",
        "recording",
        "resume",
        "runs",
        "settings",
        "stats",
        "trace",
    },
    "report": {
        *LOW,
        "fileio",
        "history",
        "hooks",
        "marathon",
        "markers",
        "metrics",
        "recording",
        "settings",
        "trace",
    },
    # Triage drives the layers below it from recorded runs: it reads traces, re-drives them against the
    # simulated model under the guards, and judges the re-drives with the metrics and intervals.
    "triage": {*LOW, "fileio", "guards", "metrics", "recording", "settings", "sim", "stats", "trace"},
    # The faces at the top: the entry point wires every face; the public API names every engine; the
    # command line drives every engine.
    "plugin": {
        "endpoint",
        "guards",
        "history",
        "hooks",
        "marathon",
        "recording",
        "replay",
        "report",
        "resume",
        "runs",
        "settings",
        "step",
    },
    "__init__": {
        *LOW,
        "_moved",
        "adapters",
        "endpoint",
        "guards",
        "hooks",
        "lifecycle",
        "recording",
        "replay",
        "resume",
        "settings",
        "trace",
    },
    "__main__": {"cli"},
    "cli": {
        "adapters",  # `agentevals contract graph`: graph_contract, LangGraph imported by that command only
        "contract",
        "endpoint",
        "errors",
        "guards",
        "history",
        "imports",
        "marathon",
        "metrics",
        "recording",
        "replay",
        "report",
        "resume",
        "settings",
        "step",
        "trace",
        "triage",
    },
}

# Layers meet through each other's public engine API: a module of another package imports these
# only by the names of the package's `__all__` (`from ..replay import Interaction`), never a module
# of theirs (`from ..replay.index import ...`). The wiring (the entry point, the public API) and a
# command's own layer are exempt: they are that layer's faces.
LAYERS_WITH_AN_API = {
    "replay",
    "step",
    "resume",
    "marathon",
    "history",
    "report",
    "endpoint",
    "adapters",
    "triage",
}
WIRING = {"pytest_agentevals", "pytest_agentevals.plugin"}
COMMANDS_OWN = {
    "cli.flaky": {"history"},
    "cli.marathon": {"marathon"},
    "cli.report": {"report", "marathon"},  # the night's verdicts beside its traces
    "cli.replay": {"replay", "endpoint"},  # a command replayed through the model endpoint
    "cli.record": {"endpoint"},
    "cli.resume": {"resume"},
    "cli.scan": {"report"},
    "cli.step": {"step"},
    "cli.judge": {"step"},
    "cli.promote": {"replay"},
    "cli.triage": {"triage"},
}


def engine_violations(edges: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{source} imports the face {target}"
        for source, targets in edges.items()
        if not is_face(source)
        for target in targets
        if is_face(target)
    )


def imports_of(path: Path) -> list[str]:
    """Every module an `import` statement of the file names, ours or not, as written (absolute)."""
    found: list[str] = []
    for node in import_statements(path):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append(node.module)
    return found


def pytest_violations(modules: dict[str, Path]) -> list[str]:
    bad = []
    for name, path in sorted(modules.items()):
        if name in PYTEST_ALLOWED or name.endswith(".plugin"):
            continue
        for imported in imports_of(path):
            if imported.split(".")[0] in {"pytest", "_pytest"}:
                bad.append(f"{name} imports {imported}")
    return bad


def layering_violations(graph: dict[str, set[str]]) -> list[str]:
    unlisted = [
        f"{folder}: not in MAY_IMPORT (every folder must be)" for folder in graph if folder not in MAY_IMPORT
    ]
    return sorted(
        unlisted
        + [
            f"{folder} imports {target}"
            for folder, allowed in MAY_IMPORT.items()
            for target in graph.get(folder, set())
            if target not in allowed
        ]
    )


def public_names(package: str) -> set[str]:
    from pytest_agentevals._lazy import homes

    init = PACKAGE / package / "__init__.py"
    return set(homes(f"pytest_agentevals.{package}", str(init))) if init.is_file() else set()


def private_reaches(imports: Iterable[tuple[str, str, tuple[str, ...]]]) -> list[str]:
    """(importer, module it imports from, names) that reach into another layer past its public API."""
    bad: list[str] = []
    for source, module, names in imports:
        parts = module.split(".")
        if parts[0] != "pytest_agentevals" or len(parts) < 2 or source in WIRING:
            continue
        layer, own = parts[1], folder_of(source)
        if layer not in LAYERS_WITH_AN_API or layer == own:
            continue
        if layer in COMMANDS_OWN.get(source.removeprefix("pytest_agentevals."), set()):
            continue
        if len(parts) > 2:
            bad.append(f"{source}: from {module} import {', '.join(names)} (a module of {layer}/)")
            continue
        public = public_names(layer)
        bad.extend(
            f"{source}: from {module} import {name} (not in {layer}'s __all__)"
            for name in names
            if name not in public
        )
    return sorted(bad)


def cross_imports() -> list[tuple[str, str, tuple[str, ...]]]:
    found = []
    for name, path in _modules().items():
        for node in import_statements(path):
            if isinstance(node, ast.ImportFrom):
                found.append((name, _absolute(node, name, path), tuple(alias.name for alias in node.names)))
    return found


def test_the_graph_holds_the_edges_it_should() -> None:
    edges = import_graph()
    assert "pytest_agentevals.cli.show" in edges["pytest_agentevals.cli"]
    assert "pytest_agentevals.settings" in edges["pytest_agentevals.plugin"]
    # An import by name, through a deprecated alias, is an edge too.
    assert deprecated_targets(PACKAGE / "resume" / "__init__.py") == ("pytest_agentevals.resume.run",)
    assert folder_graph(edges)["resume"] >= {"replay", "recording", "runs"}


def test_no_import_cycles() -> None:
    found = [sorted(c) for c in cycles(import_graph()) if c not in KNOWN]
    assert found == []


def test_no_cycles_between_folders_faces_included() -> None:
    assert [sorted(c) for c in cycles(folder_graph(import_graph()))] == []


def test_engines_never_import_a_face_or_the_command_line() -> None:
    assert engine_violations(import_graph()) == []


def test_pytest_is_imported_only_by_the_faces_and_the_glue() -> None:
    assert pytest_violations(_modules()) == []


def test_every_folder_imports_only_what_the_table_allows() -> None:
    assert layering_violations(folder_graph(import_graph())) == []
    assert set(MAY_IMPORT) == set(folder_graph(import_graph())), "a folder in the table is gone"


def test_layers_meet_only_through_their_public_api() -> None:
    assert private_reaches(cross_imports()) == []


def test_the_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    # Each rule, shown a graph that breaks it, says so (a rule that cannot fail checks nothing).
    edges = import_graph()
    edges["pytest_agentevals.trace.reader"].add("pytest_agentevals.replay.plugin")
    assert engine_violations(edges) == [
        "pytest_agentevals.trace.reader imports the face pytest_agentevals.replay.plugin"
    ]
    assert "trace imports replay" in layering_violations(folder_graph(edges))
    # A loop that only a face closes is a loop between folders (what faces.py once hid).
    edges = import_graph()
    edges["pytest_agentevals.markers"].add("pytest_agentevals.history.attempts")
    assert any({"history", "markers"} <= c for c in cycles(folder_graph(edges)))
    assert not any("pytest_agentevals.markers" in c for c in cycles(edges))  # no module cycle
    edges = import_graph()
    edges["pytest_agentevals.metrics.run"].add("pytest_agentevals.step.case")
    edges["pytest_agentevals.step.case"].add("pytest_agentevals.metrics.run")
    assert any({"pytest_agentevals.metrics.run", "pytest_agentevals.step.case"} <= c for c in cycles(edges))
    # A new folder must be placed in the table; pytest outside the faces is named.
    assert layering_violations({**folder_graph(import_graph()), "newlayer": {"replay"}}) == [
        "newlayer: not in MAY_IMPORT (every folder must be)"
    ]
    here = tmp_path / "example.py"
    here.write_text("import pytest\n", encoding="utf-8")
    assert pytest_violations({"pytest_agentevals.trace.example": here}) == [
        "pytest_agentevals.trace.example imports pytest"
    ]
    assert pytest_violations({"pytest_agentevals.replay.plugin": here}) == []
    # Another layer's module, or a name outside its __all__, is a private reach; its public names,
    # a package's own modules and a command's own layer are not.
    assert private_reaches(
        [
            ("pytest_agentevals.step.cassette", "pytest_agentevals.replay.index", ("RequestIndex",)),
            ("pytest_agentevals.step.cassette", "pytest_agentevals.replay", ("sdk",)),
            ("pytest_agentevals.step.cassette", "pytest_agentevals.replay", ("RequestIndex",)),
            ("pytest_agentevals.replay.engine", "pytest_agentevals.replay.index", ("RequestIndex",)),
            ("pytest_agentevals.cli.step", "pytest_agentevals.step.extract", ("extract",)),
            ("pytest_agentevals.cli.step", "pytest_agentevals.replay.sdk", ("install",)),
        ]
    ) == [
        "pytest_agentevals.cli.step: from pytest_agentevals.replay.sdk import install (a module of replay/)",
        "pytest_agentevals.step.cassette: from pytest_agentevals.replay import sdk (not in replay's __all__)",
        "pytest_agentevals.step.cassette: from pytest_agentevals.replay.index import RequestIndex "
        "(a module of replay/)",
    ]


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
        "m.rsplit('.', 1)[-1] in ('engine', 'recorder', 'run', 'tally', 'sqlite', 'archive', 'html')))"
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
