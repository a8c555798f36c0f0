"""Where fixtures live: `<fixtures_dir>/<name>/`, found by name, listed, and written whole.

A name that matches no fixture is an error listing the fixtures that exist. A new or replaced fixture
is written into a scratch folder beside its place (`.NAME.extracting-*`, ignored by the listing) and
renamed into place once its manifest is written: a fixture is whole or absent.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import CheckpointError
from ..fileio import remove_tree
from .fixture import MANIFEST, Fixture, check_name


def names(fixtures_dir: Path) -> list[str]:
    """The fixtures in the folder: every sub-folder holding a manifest (links and dot-folders are not)."""
    if not fixtures_dir.is_dir():
        return []
    return sorted(
        entry.name
        for entry in os.scandir(fixtures_dir)
        if not entry.name.startswith(".")
        and entry.is_dir(follow_symlinks=False)
        and os.path.isfile(os.path.join(entry.path, MANIFEST))
    )


def incomplete(fixtures_dir: Path) -> list[str]:
    """Sub-folders without a manifest: interrupted extractions, or fixtures whose manifest went missing."""
    if not fixtures_dir.is_dir():
        return []
    return sorted(
        entry.name
        for entry in os.scandir(fixtures_dir)
        if entry.is_dir(follow_symlinks=False)
        and not entry.name.startswith((".", "_"))
        and entry.name != "__pycache__"
        and not os.path.exists(os.path.join(entry.path, MANIFEST))
        and any(os.scandir(entry.path))
        and not _holds_python(entry.path)
    )


@dataclass
class Survey:
    """The fixtures folder as `agentevals resume list` shows it: the fixtures that open, the problem
    of each that does not, and the folders without a manifest."""

    fixtures_dir: Path
    fixtures: list[Fixture]
    broken: list[str]
    incomplete: list[Path]


def survey(fixtures_dir: Path) -> Survey:
    fixtures: list[Fixture] = []
    broken: list[str] = []
    for name in names(fixtures_dir):
        try:
            fixtures.append(Fixture.open(fixtures_dir / name))
        except CheckpointError as exc:
            broken.append(str(exc))
    unfinished = [fixtures_dir / name for name in incomplete(fixtures_dir)]
    return Survey(fixtures_dir, fixtures, broken, unfinished)


def _holds_python(path: str) -> bool:
    return any(name.endswith(".py") for name in os.listdir(path))


def locate(name: str | os.PathLike[str], fixtures_dir: Path, rootdir: Path | None = None) -> Path:
    """The folder of fixture `name`: a bare name under `fixtures_dir`, or a path to a fixture folder
    (absolute, or relative to `rootdir`). A name with no fixture lists those that exist."""
    text = os.fspath(name)
    if "/" in text or os.sep in text:
        path = Path(text).expanduser()
        if not path.is_absolute() and rootdir is not None:
            path = rootdir / path
        return path
    check_name(text, "fixture name")
    folder = fixtures_dir / text
    if not folder.is_dir():
        known = names(fixtures_dir)
        listed = ", ".join(known) if known else "none"
        raise CheckpointError(
            text,
            f"no such checkpoint fixture in {fixtures_dir} (the fixtures there: {listed})",
            f"check the name, or extract one: agentevals resume extract TRACE --at STEP --name {text}",
        )
    return folder


def open_fixture(name: str | os.PathLike[str], fixtures_dir: Path, rootdir: Path | None = None) -> Fixture:
    return Fixture.open(locate(name, fixtures_dir, rootdir))


def write_whole(target: Path, build: Callable[[Path], None], *, force: bool) -> None:
    """Build a fixture with `build(scratch)` (which writes the manifest last) in a scratch folder
    beside `target`, then rename it into place; replace an existing one only with `force`."""
    if target.exists() and not force:
        raise CheckpointError(target, "exists", "choose another --name, or --force to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = _fresh(target, "extracting")
    try:
        build(scratch)
        if not (scratch / MANIFEST).is_file():
            raise CheckpointError(target, "the extraction wrote no manifest")
        if target.exists() or target.is_symlink():
            old = _fresh(target, "replaced", make=False)
            os.rename(target, old)
            os.rename(scratch, target)
            remove_tree(old)
        else:
            os.rename(scratch, target)
    except BaseException:
        remove_tree(scratch)
        raise


def _fresh(target: Path, what: str, make: bool = True) -> Path:
    while True:
        path = target.with_name(f".{target.name}.{what}-{secrets.token_hex(4)}")
        if not make:
            if not path.exists():
                return path
            continue
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return path
