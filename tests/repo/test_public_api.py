"""The public surface: what the README and the docs import is public — a name in the `__all__` of
the package or module it comes from (a submodule itself, named without a leading underscore, is
public too). Everything else is internal, and a doc example that reaches for it fails here."""

from __future__ import annotations

import ast
import importlib
import re
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
        from pytest_agentevals import ReplaySession as at_the_root  # noqa: F401
    blamed |= {warning.filename for warning in caught}
    with pytest.warns(AgentEvalsDeprecationWarning) as caught:
        from pytest_agentevals.replay import ReplaySession as in_replay  # type: ignore[attr-defined]  # noqa: F401
    blamed |= {warning.filename for warning in caught}
    assert blamed == {__file__}
