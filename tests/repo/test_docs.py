"""The README's and the docs' examples are run, so they stay true to what the code does.

Every ```python block of a document runs, in order, in one namespace, in a fresh folder. A block
right after a `<!-- not run -->` line is skipped (one that needs a real API key, say). Every ```toml
block holding a [tool.agentevals] table is resolved into Settings, so a documented key that does not
exist fails here.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from pytest_agentevals import ConfigError
from pytest_agentevals.history import ci_env
from pytest_agentevals.settings import Settings

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
FENCE = re.compile(r"(?P<skip><!-- not run -->\s*\n)?```(?P<lang>\w+)[^\n]*\n(?P<code>.*?)\n```", re.S)


def blocks(document: Path, language: str) -> list[tuple[int, str]]:
    text = document.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 1, match.group("code"))
        for match in FENCE.finditer(text)
        if match.group("lang") == language and not match.group("skip")
    ]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(REPO).as_posix())
def test_python_examples_run(
    document: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_api_key: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(REPO))
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for line, code in blocks(document, "python"):
        try:
            exec(compile(code, f"{document.name}:{line}", "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"the example at {document.name}:{line} failed: {type(exc).__name__}: {exc}")


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(REPO).as_posix())
def test_toml_examples_are_valid_settings(document: Path, tmp_path: Path) -> None:
    for line, code in blocks(document, "toml"):
        table = tomllib.loads(code).get("tool", {}).get("agentevals")
        if table is None:
            continue
        try:
            Settings.resolve(tmp_path, pyproject=table)
        except ConfigError as exc:
            pytest.fail(f"the settings at {document.name}:{line} are wrong: {exc}")


def test_history_doc_gives_the_sha_precedence_the_code_has(tmp_path: Path) -> None:
    row = next(
        line for line in (REPO / "docs" / "history.md").read_text().splitlines() if line.startswith("| sha ")
    )
    said = [row.index(source) for source in ("--agentevals-sha", "CI", "git")]
    assert said == sorted(said), row  # the option first, then the CI, then git
    ci = {"GITHUB_ACTIONS": "true", "GITHUB_SHA": "from-the-ci"}
    assert ci_env.resolve_commit(tmp_path, ci, sha="given").sha == "given"
    assert ci_env.resolve_commit(tmp_path, ci).sha == "from-the-ci"


def test_the_step_guide_says_its_outside_pytest_snippet_needs_the_repository_root() -> None:
    text = (REPO / "docs" / "step.md").read_text()
    start = text.index("The same check works outside pytest")
    lead_in = " ".join(text[start : text.index("from pytest_agentevals.step", start)].split())
    assert "import examples" in lead_in  # the snippet imports the example agent's package...
    assert "repository root must be on `sys.path`" in lead_in  # ...and the guide says what that needs


def test_the_frameworks_guide_turns_langsmith_s_plugin_off_as_this_repository_does(
    pytestconfig: pytest.Config,
) -> None:
    guide = (REPO / "docs" / "frameworks.md").read_text()
    said = tomllib.loads(next(code for _, code in blocks(REPO / "docs" / "frameworks.md", "toml")))
    option = said["tool"]["pytest"]["ini_options"]["addopts"]
    assert option == "-p no:langsmith_plugin"
    assert "as this repository does" in guide
    ours = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert option in ours
    assert pytestconfig.pluginmanager.is_blocked("langsmith_plugin")  # this session runs without it
