"""`.ci/run` is the README's set-up and test commands, then the style and type checks."""

from __future__ import annotations

import re

from ..conftest import REPO


def _commands(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_ci_runs_the_readme_commands_then_ruff_and_mypy() -> None:
    readme = (REPO / "README.md").read_text()
    setup = readme[readme.index("## Set-up") : readme.index("## Quick start")]
    readme_commands = [
        command
        for block in re.findall(r"```console\n(.*?)```", setup, re.S)
        for line in _commands(block)
        for command in line.split(" && ")
    ]
    assert readme_commands == [
        "python -m pip install -e '.[test]'",
        "python -m examples",
        "python -m pytest -n auto",
    ]
    ci = _commands((REPO / ".ci" / "run").read_text())
    positions = [ci.index(command) for command in readme_commands]
    assert positions == sorted(positions)  # the README's commands, in the README's order
    checks = ["ruff check .", "ruff format --check .", "mypy"]
    assert ci[-len(checks) :] == checks
    # The dev extra (ruff, mypy) comes in after the README's commands ran in the README's environment.
    assert ci.index("python -m pip install --quiet -e '.[dev]'") > positions[-1]
