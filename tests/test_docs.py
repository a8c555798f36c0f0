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

from pytest_agentevals import ConfigError, Settings

REPO = Path(__file__).resolve().parent.parent
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
