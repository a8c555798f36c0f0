"""The 0.1 module paths that moved import through 0.x with a warning naming the new path
(`pytest_agentevals/_moved.py`), the table in the code is the one CHANGELOG.md prints, and a path
that never existed is still no module."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_agentevals import _moved

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_agentevals"


def _module_file(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _expand(cell: str) -> set[str]:
    """A cell's dotted names: `pytest_agentevals.guards.protocol`, `.runner` is two modules of
    `guards`; `replay.run` is short for `pytest_agentevals.replay.run`."""
    found: set[str] = set()
    first = ""
    for token in re.findall(r"`([^`]+)`", cell):
        token = token.split("(")[0].strip()
        if not re.fullmatch(r"\.?[A-Za-z_][\w.]*(\.\*)?", token) or "." not in token:
            continue
        if token.startswith("."):
            token = first.rsplit(".", 1)[0] + token
        elif not token.startswith("pytest_agentevals"):
            token = f"pytest_agentevals.{token}"
        first = first or token
        found.add(token)
    return found


def _moved_rows() -> list[tuple[set[str], set[str]]]:
    """The rows of CHANGELOG.md's two tables of moved modules ("before | now" and "0.1 | 0.2")."""
    rows: list[tuple[set[str], set[str]]] = []
    table = False
    for line in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").splitlines():
        cells = (
            [cell.strip() for cell in line.strip().strip("|").split("|")]
            if line.strip().startswith("|")
            else []
        )
        if len(cells) == 2 and cells in (["before", "now"], ["0.1", "0.2"]):
            table = True
        elif table and len(cells) == 2 and not set(cells[0]) <= set("-"):
            rows.append((_expand(cells[0]), _expand(cells[1])))
        elif not cells:
            table = False
    return rows


def _row_of(old: str) -> set[str]:
    for left, right in _moved_rows():
        if old in left or f"{old}.*" in left:
            return right
    raise AssertionError(f"{old} is in _moved.py but in no row of CHANGELOG.md's tables of moved modules")


def test_the_tables_of_moved_modules_are_read() -> None:
    rows = _moved_rows()
    assert len(rows) > 40
    assert ({"pytest_agentevals.golden.*"}, {"pytest_agentevals.step.*"}) in rows


def test_every_move_in_the_code_is_a_row_of_the_changelog() -> None:
    for old, new in _moved.MOVED.items():
        right = _row_of(old)
        assert new in right or f"{new}.*" in right, f"{old} -> {new}: CHANGELOG.md says {sorted(right)}"
    for old, targets in _moved.SPLIT.items():
        assert set(targets) <= _row_of(old), old
    for old in _moved.GONE:
        _row_of(old)


def test_every_module_row_of_the_changelog_imports_or_says_where_it_went() -> None:
    # Each old spelling is a module of today (it stayed), a name inside one (an attribute: not a
    # module path), or a shim of the table.
    unanswered = []
    for left, _ in _moved_rows():
        for old in left:
            if old.endswith(".*"):
                if old[:-2] not in _moved.MOVED:
                    unanswered.append(old)
                continue
            if _module_file(old) or (_module_file(old.rsplit(".", 1)[0]) and not _moved.resolve(old)):
                continue
            if old not in _moved.SPLIT and old not in _moved.GONE and _moved.resolve(old) is None:
                unanswered.append(old)
    assert unanswered == []


def test_every_old_path_is_gone_and_every_new_one_is_there() -> None:
    for old in [*_moved.MOVED, *_moved.SPLIT, *_moved.GONE]:
        assert not _module_file(old), f"{old} exists: it is no move"
    for old in [*_moved.MOVED, *_moved.SPLIT]:
        for new in _moved.SPLIT.get(old) or [_moved.resolve(old)]:
            assert new is not None, old
            assert _module_file(new), f"{old} -> {new}: no such module"


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_each_old_path_imports_as_its_new_module_with_one_warning_naming_it() -> None:
    old_paths = sorted([*_moved.MOVED, *_moved.SPLIT])
    out = _run(
        f"""
        import importlib, json, sys, warnings
        from pytest_agentevals._moved import resolve
        seen = {{}}
        for old in {old_paths!r}:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                module = importlib.import_module(old)
            new = resolve(old)
            mine = [str(w.message) for w in caught if str(w.message).startswith(old + " ")]
            proxy = old in sys.modules and module.__spec__.name == old  # an old package, or a split
            same = proxy or module is sys.modules[new]
            seen[old] = [mine, same, proxy == (hasattr(module, "__path__") or new is None)]
        print(json.dumps(seen))
        """
    )
    seen = json.loads(out)
    for old in old_paths:
        messages, same, spec = seen[old]
        news = _moved.SPLIT.get(old) or [_moved.resolve(old)]
        assert len(messages) == 1, (old, messages)
        assert all(new in messages[0] for new in news), (old, messages)
        assert "AgentEvalsDeprecationWarning" not in messages[0]
        assert same, old
        assert spec, old


def test_an_old_module_is_the_new_module_and_its_names_are_the_same_objects() -> None:
    out = _run(
        """
        import pytest_agentevals.golden.case as old, pytest_agentevals.step.case as new
        from pytest_agentevals.golden import StepCase
        from pytest_agentevals.recording.guards.guard import Guard
        from pytest_agentevals.faces import settings_of, is_worker
        import pytest_agentevals.checkpoint.extract
        import pytest_agentevals.guards.protocol, pytest_agentevals.settings.plugin, pytest_agentevals.markers
        import pytest_agentevals.resume, pytest_agentevals.step
        print(old is new, StepCase is pytest_agentevals.step.StepCase,
              Guard is pytest_agentevals.guards.protocol.Guard,
              settings_of is pytest_agentevals.settings.plugin.settings_of,
              is_worker is pytest_agentevals.markers.is_worker,
              callable(pytest_agentevals.resume.extract), type(pytest_agentevals.resume.extract).__name__)
        """
    )
    # Importing checkpoint.extract (now the module resume.extraction) left resume.extract the function.
    assert out.split() == ["True"] * 6 + ["function"]


def test_the_warning_points_at_the_import_that_used_the_old_path(tmp_path: Path) -> None:
    user = tmp_path / "conftest_like.py"
    user.write_text("import pytest_agentevals.recording.replay.engine\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", str(user)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "AgentEvalsDeprecationWarning" in line]
    assert lines, done.stderr
    assert all(line.startswith(f"{user}:1: ") for line in lines), done.stderr
    assert "pytest_agentevals.recording.replay.engine moved to pytest_agentevals.replay.engine" in done.stderr


def test_a_path_that_never_existed_is_still_no_module_and_a_gone_one_says_what_replaces_it() -> None:
    out = _run(
        """
        import importlib
        for name in ["pytest_agentevals.nothere", "pytest_agentevals.golden.nothere",
                     "pytest_agentevals.recording.replay.nothere", "pytest_agentevals.step.nothere",
                     "pytest_agentevals.recording.factory"]:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as error:
                print(type(error).__name__, error.name, "|", error)
            else:
                print("imported", name)
        """
    )
    lines = out.splitlines()
    never = ["nothere", "golden.nothere", "recording.replay.nothere", "step.nothere"]
    for line, name in zip(lines[:4], never, strict=True):
        full = f"pytest_agentevals.{name}"
        assert line == f"ModuleNotFoundError {full} | No module named '{full}'"
    assert lines[4].startswith("ModuleNotFoundError pytest_agentevals.recording.factory | ")
    assert "Recorder.for_spec" in lines[4]


def test_a_chain_of_moves_is_followed_and_a_loop_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _moved.resolve("pytest_agentevals.golden.session") == "pytest_agentevals.step.goldens"
    assert _moved.resolve("pytest_agentevals.recording.replay.session") == "pytest_agentevals.replay.run"
    assert _moved.resolve("pytest_agentevals.step.case") is None
    monkeypatch.setitem(_moved.MOVED, "pytest_agentevals.a", "pytest_agentevals.b")
    monkeypatch.setitem(_moved.MOVED, "pytest_agentevals.b", "pytest_agentevals.a")
    with pytest.raises(RuntimeError, match="loop"):
        _moved.resolve("pytest_agentevals.a.x")
