"""The public surface: what the README and the docs import is public — a name in the `__all__` of
the package or module it comes from (a submodule itself, named without a leading underscore, is
public too). Everything else is internal, and a doc example that reaches for it fails here."""

from __future__ import annotations

import ast
import importlib
import re
import warnings
from pathlib import Path
from types import ModuleType

import pytest

from pytest_agentevals.errors import AgentEvalsDeprecationWarning

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([REPO / "README.md", REPO / "examples" / "README.md", *(REPO / "docs").glob("*.md")])
# Every python block, the ones marked `<!-- not run -->` included: a reader copies those too.
FENCE = re.compile(r"```python[^\n]*\n(?P<code>.*?)\n```", re.S)


def private_imports(code: str) -> list[str]:
    """What a block of code imports from this package that is not public, each with why."""
    found: list[str] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pytest_agentevals" and _private_path(alias.name):
                    found.append(f"import {alias.name}: a private module")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pytest_agentevals":
            assert node.module is not None
            if _private_path(node.module):
                found.append(f"from {node.module}: a private module")
                continue
            source = importlib.import_module(node.module)
            found.extend(f"from {node.module} import {alias.name}: {why}" for alias in node.names
                         if (why := _not_public(source, alias.name)))  # fmt: skip
    return found


def _private_path(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def _not_public(source: ModuleType, name: str) -> str | None:
    if name.startswith("_"):
        return "a private name"
    if isinstance(getattr(source, name, None), ModuleType):
        return None  # a submodule, named as public
    exported = getattr(source, "__all__", None)
    if exported is None:
        return f"{source.__name__} has no __all__: nothing in it is public"
    return None if name in exported else f"not in {source.__name__}.__all__"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(REPO).as_posix())
def test_the_docs_import_only_public_names(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    problems = [
        f"{document.name}:{text.count(chr(10), 0, match.start()) + 1}: {problem}"
        for match in FENCE.finditer(text)
        for problem in private_imports(match.group("code"))
    ]
    assert problems == []


def test_a_private_name_in_an_example_is_caught() -> None:
    assert (
        private_imports("from pytest_agentevals.replay import Replayer\nimport pytest_agentevals as ae") == []
    )
    assert private_imports("from pytest_agentevals.replay.engine import _served") == [
        "from pytest_agentevals.replay.engine import _served: a private name"
    ]
    assert private_imports("from pytest_agentevals.replay import cassette_names") == [
        "from pytest_agentevals.replay import cassette_names: not in pytest_agentevals.replay.__all__"
    ]
    assert private_imports("from pytest_agentevals._lazy import attach") == [
        "from pytest_agentevals._lazy: a private module"
    ]
    assert private_imports("from pytest_agentevals.replay.vcr_yaml import load") == [
        "from pytest_agentevals.replay.vcr_yaml import load: pytest_agentevals.replay.vcr_yaml has no "
        "__all__: nothing in it is public"
    ]


def test_a_deprecation_warning_points_at_the_line_that_used_the_old_name() -> None:
    # The root wraps its lookup (for __version__) and a from-import goes through importlib: neither
    # may be blamed, or Python's default filters would hide the warning outside a test run.
    import pytest_agentevals as ae

    blamed: set[str] = set()
    with pytest.warns(AgentEvalsDeprecationWarning) as caught:
        ae.ReplaySession  # noqa: B018
    blamed |= {warning.filename for warning in caught}
    with pytest.warns(AgentEvalsDeprecationWarning) as caught:
        ae.TraceWriter  # noqa: B018  (a name that left the root, answered from its new home)
    blamed |= {warning.filename for warning in caught}
    with pytest.warns(AgentEvalsDeprecationWarning) as caught:
        from pytest_agentevals import ReplaySession as at_the_root  # noqa: F401
    blamed |= {warning.filename for warning in caught}
    with pytest.warns(AgentEvalsDeprecationWarning) as caught:
        from pytest_agentevals.replay import ReplaySession as in_replay  # type: ignore[attr-defined]  # noqa: F401
    blamed |= {warning.filename for warning in caught}
    assert blamed == {__file__}


# -- the tiers (docs/api.md) ---------------------------------------------------------------------------
API_PAGE = REPO / "docs" / "api.md"
PACKAGE = REPO / "pytest_agentevals"
ROOT_AT_MOST = 30
# The root names that left tier 1, and the tier-2 home each is public in now. Written out here, not
# read from the package: this table is what says none of them was dropped silently.
LEFT_THE_ROOT = {
    **dict.fromkeys(
        [
            "CheckpointError",
            "ContractDrift",
            "GoldenError",
            "GuardError",
            "HistoryError",
            "LedgerError",
            "NewerTraceVersion",
            "RecordingError",
            "SimError",
            "StaleCassette",
            "StaleGolden",
            "TraceError",
            "TraceFormatError",
            "UnrecordedRequest",
        ],
        "pytest_agentevals.errors",
    ),
    "BudgetLeft": "pytest_agentevals.guards",
    "LAYERS": "pytest_agentevals.settings",
    "Layer": "pytest_agentevals.settings",
    "ReplayReport": "pytest_agentevals.replay",
    "ResumePoint": "pytest_agentevals.resume",
    "resume_point_from_trace": "pytest_agentevals.resume",
    "Settings": "pytest_agentevals.settings",
    "TraceReader": "pytest_agentevals.trace",
    "TraceWriter": "pytest_agentevals.trace",
    "current_recorder": "pytest_agentevals.recording",
}
# Renamed at the root before (a 0.1 name of a root name): old name -> the root name it is.
RENAMED_AT_THE_ROOT = {"ReplaySession": "ReplayRun"}
# The root's `__all__` before the tiers: each of its names is in tier 1 still, or in LEFT_THE_ROOT.
ROOT_BEFORE = {
    "LAYERS", "AgentEvalsDeprecationWarning", "AgentEvalsError", "AgentRun", "Budget", "BudgetLeft",
    "CassetteError", "CheckpointError", "ConfigError", "ContractDrift", "GoldenError", "Guard",
    "GuardError", "HistoryError", "Layer", "LedgerError", "ModelEndpoint", "NewerTraceVersion",
    "Recorder", "RecordingError", "ReplayDivergence", "ReplayReport", "ReplayRun", "Replayer",
    "ResumePoint", "RunStopped", "Settings", "SimError", "StaleCassette", "StaleGolden", "TraceError",
    "TraceFormatError", "TraceReader", "TraceWriter", "UnrecordedRequest", "__version__", "budget_left",
    "checkpoint", "compaction", "current_recorder", "expect_progress", "model_endpoint", "note",
    "read_trace", "resume_point_from_trace", "tool", "verification", "wrap_tools",
}  # fmt: skip


def modules_with_an_all() -> list[str]:
    """Every module of the package that assigns `__all__` at its top level: tier 2 (the root, tier 1,
    among them)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and any(
                isinstance(target, ast.Name) and target.id == "__all__"
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            ):
                parts = list(path.relative_to(REPO).with_suffix("").parts)
                found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
                break
    return found


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def api_page() -> tuple[list[str], list[str]]:
    """The names docs/api.md lists as tier 1, and the modules it lists as tier 2, as written."""
    text = API_PAGE.read_text(encoding="utf-8")
    entry = re.compile(r"^- `([^`]+)` — ", re.M)
    return entry.findall(_section(text, "Tier 1")), entry.findall(_section(text, "Tier 2"))


def test_the_root_stays_small() -> None:
    import pytest_agentevals as ae

    assert len(ae.__all__) <= ROOT_AT_MOST, "tier 1 is the everyday names: move the rest to a package"
    assert len(set(ae.__all__)) == len(ae.__all__)


def test_the_api_page_names_exactly_the_root() -> None:
    import pytest_agentevals as ae

    root, _ = api_page()
    assert sorted(root) == sorted(ae.__all__)
    assert len(root) == len(set(root)), "a root name listed twice"
    assert f"({len(ae.__all__)} names, listed below)" in API_PAGE.read_text(encoding="utf-8")


def test_the_api_page_lists_every_module_with_an_all_and_nothing_else() -> None:
    _, listed = api_page()
    assert sorted(listed) == sorted(set(modules_with_an_all()) - {"pytest_agentevals"})
    assert len(listed) == len(set(listed)), "a module listed twice"


def test_every_name_that_left_the_root_warns_and_is_its_new_home_s() -> None:
    import pytest_agentevals as ae

    # Tier 1 now, or moved with a warning: no root name of 0.1 vanished.
    assert ROOT_BEFORE - set(ae.__all__) == set(LEFT_THE_ROOT)
    for name, home in LEFT_THE_ROOT.items():
        module = importlib.import_module(home)
        assert name in module.__all__, f"{name} is not public in {home}, its new home"
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the new home itself is no deprecated spelling
            new = getattr(module, name)
        with pytest.warns(AgentEvalsDeprecationWarning, match=r"use that") as caught:
            old = getattr(ae, name)
        assert old is new
        said = str(caught[0].message)
        assert said.startswith(f"pytest_agentevals.{name} is the 0.x name of {home}.{name};")
        assert name not in dir(ae)
    for name, now in RENAMED_AT_THE_ROOT.items():
        with pytest.warns(AgentEvalsDeprecationWarning, match=rf"pytest_agentevals\.{now}; use that"):
            assert getattr(ae, name) is getattr(ae, now)


def old_spellings(path: Path) -> list[str]:
    """Where a file spells a name that left the root the old way (`ae.X`, `pytest_agentevals.X`,
    `from pytest_agentevals import X`), code in strings and prose included."""
    old = {*LEFT_THE_ROOT, *RENAMED_AT_THE_ROOT}
    text = path.read_text(encoding="utf-8")
    found = []
    for match in re.finditer(rf"\b(?:ae|pytest_agentevals)\.({'|'.join(sorted(old))})\b", text):
        found.append((match.start(), match[0]))
    for match in re.finditer(r"from pytest_agentevals import (\([^)]*\)|[^\n]*)", text):
        words = re.sub(r"#[^\n]*", "", match[1]).strip("()").split(",")
        imported = {word.split()[0] for word in words if word.strip()}
        found.extend((match.start(), f"imports {name}") for name in sorted(imported & old))
    return [f"{path.relative_to(REPO)}:{text.count(chr(10), 0, at) + 1}: {what}" for at, what in found]


def test_nothing_in_the_repository_uses_a_name_that_left_the_root() -> None:
    # The README, the docs, the examples, the example's pyramid, the benchmarks and the tests spell
    # every name by its tier-2 home; only this file, which tests the old spellings, uses them.
    folders = ["docs", "examples", "cassettes", "goldens", "fixtures", "marathons", "benchmarks", "tests"]
    files = [REPO / "README.md", *(path for folder in folders for path in sorted((REPO / folder).rglob("*")))]
    found = [
        where
        for path in files
        if path.suffix in {".py", ".md"} and path != Path(__file__)
        for where in old_spellings(path)
    ]
    assert found == []
    # And it sees them: this file has each kind.
    assert any("imports ReplaySession" in where for where in old_spellings(Path(__file__)))
    assert any("ae.TraceWriter" in where for where in old_spellings(Path(__file__)))
