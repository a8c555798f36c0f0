"""Where a cassette lives: a test's own cassette, and a name given in a marker or to the fixture.

A test's own cassette is `<cassettes_dir>/<module>/<[Class.]test>.trace.jsonl`. A project moving from
pytest-recording keeps its YAML cassettes where that plugin put them
(`<test folder>/cassettes/<module>/<[Class.]test>.yaml`): a bare marker finds them there too, so
only the marker changes.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..trace.naming import TRACE_SUFFIX, safe_name

YAML_SUFFIXES = (".yaml", ".yml")
# The characters pytest-recording replaces in its cassette names (to find its files, not to name ours).
_PYTEST_RECORDING_UNSAFE = "<>?%*:|\"'/\\"


def _pytest_recording_name(test: str) -> str:
    for char in _PYTEST_RECORDING_UNSAFE:
        test = test.replace(char, "-")
    return test


def own_cassettes(cassettes_dir: Path, module: Path | None, test: str) -> list[Path]:
    """Where a test's own cassette may be, in the order looked at; the first is where one is recorded.

    `module` is the test's file (None for a test without one), `test` its name with its class
    (`TestX.test_y[1]`).
    """
    stem = module.stem if module is not None else "tests"
    ours = cassettes_dir / stem / f"{safe_name(test)}{TRACE_SUFFIX}"
    theirs = _pytest_recording_name(test)
    places = [cassettes_dir / stem]
    if module is not None:
        places.append(module.parent / "cassettes" / stem)
    return [ours, *(place / f"{theirs}{suffix}" for place in places for suffix in YAML_SUFFIXES)]


def own_cassette(cassettes_dir: Path, module: Path | None, test: str) -> Path:
    """The test's own cassette: the first of `own_cassettes` that exists, else where to record it."""
    candidates = own_cassettes(cassettes_dir, module, test)
    return next((path for path in candidates if path.is_file()), candidates[0])


def resolve(name: str | os.PathLike[str], cassettes_dir: Path, rootdir: Path) -> Path:
    """Where a cassette named in a marker or passed to the fixture lives.

    A path with a directory or a suffix: as given (absolute, or relative to the rootdir when it
    exists there, else to the cassette directory). A bare name: `<cassettes_dir>/<name>.trace.jsonl`,
    or `<name>.yaml` when only that exists.
    """
    text = os.fspath(name)
    path = Path(text).expanduser()
    if path.is_absolute():
        return path
    if "/" in text or text.endswith((TRACE_SUFFIX, ".jsonl", *YAML_SUFFIXES)):
        from_root = rootdir / path
        return from_root if from_root.exists() else cassettes_dir / path
    trace = cassettes_dir / f"{text}{TRACE_SUFFIX}"
    if not trace.exists():
        for suffix in YAML_SUFFIXES:
            if (cassettes_dir / f"{text}{suffix}").exists():
                return cassettes_dir / f"{text}{suffix}"
    return trace
