"""Restoring a workspace: checked entries written into a new directory, all or nothing.

A checkpoint's workspace is untrusted data (a fixture or a trace arrives in a pull request), and a
restore writes it to disk. So every entry is checked before anything is written, and the first
problem refuses the whole restore, naming the entry:

- a path that is absolute, climbs out (`..`), holds a NUL byte or empty parts (`trace/paths.py`);
- a link whose target leaves the workspace, followed through the workspace's other links as the
  file system would follow them (`a/l -> ..` then `x -> a/l/..` leaves it, though `a/..` would not);
- an entry below a link or below a file, the same path twice;
- a mode with setuid, setgid or sticky bits; a kind other than file, folder or link (the archive
  reader refuses hard links, devices and fifos by their tar type before they become entries);
- more than `MAX_ENTRIES` entries, more than `MAX_BYTES` bytes, a path or link target longer than
  `MAX_PATH` bytes or with a component longer than `MAX_NAME` (no file system would take it), a
  path more than `MAX_DEPTH` levels deep (removing it would overflow Python's recursion).

The checks take time linear in the index: paths and link targets are walked component by component
through one tree of the entries, never by joining every prefix.

Then the entries are written into a scratch folder beside the target — folders and files first
(created exclusively, never through a link), links last — and the scratch folder is renamed into
place. Whatever fails on the way, the scratch folder is removed: a restore is whole or absent.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import secrets
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import CheckpointError
from ..fileio import remove_tree
from ..trace.paths import link_problem, path_problem

MAX_ENTRIES = 100_000
MAX_BYTES = 4 * 1024 * 1024 * 1024  # 4 GiB of file content
MAX_PATH = 4096  # bytes of a path or a link's target: Linux's PATH_MAX
MAX_NAME = 255  # bytes of one path component: NAME_MAX of Linux's and macOS's file systems
MAX_LINK_HOPS = 40  # links followed while resolving one target (as Linux's own limit)
# Levels (components) of one path. Python 3.11's shutil.rmtree recurses once per level, so a deeper
# tree under pytest's tmp_path crashes the cleanup of a later session with a RecursionError.
MAX_DEPTH = 256

FILE, FOLDER, LINK = "file", "dir", "link"
KINDS = (FILE, FOLDER, LINK)
_HIGH_BITS = {stat.S_ISUID: "setuid", stat.S_ISGID: "setgid", stat.S_ISVTX: "sticky"}
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Entry:
    """One thing in a workspace: a file (`size`, `sha256`, `mode`), a folder, or a link (`target`)."""

    path: str
    kind: str = FILE
    mode: int = 0o644
    size: int = 0
    sha256: str | None = None
    target: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "type": self.kind}
        if self.kind == LINK:
            out["target"] = self.target
        else:
            out["mode"] = f"{self.mode:04o}"
        if self.kind == FILE:
            out.update(size=self.size, sha256=self.sha256)
        return out


def check_entries(entries: Sequence[Entry], where: str) -> None:
    """Refuse the first unsafe entry (see the module's docstring), naming it and `where` it came from."""
    if len(entries) > MAX_ENTRIES:
        raise CheckpointError(
            where,
            f"the workspace holds {len(entries)} entries, more than the {MAX_ENTRIES:,} a restore takes",
            "a checkpoint's workspace is capped so a hostile archive cannot exhaust the disk; keep build "
            "output and caches out of the agent's workspace",
        )
    total = 0
    kinds: dict[str, str] = {}
    links: dict[str, str] = {}
    for entry in entries:
        problem = _entry_problem(entry)
        if problem is None and entry.path in kinds:
            problem = "appears twice"
        if problem is not None:
            raise refused(where, entry.path, problem)
        kinds[entry.path] = entry.kind
        if entry.kind == LINK:
            links[entry.path] = str(entry.target)
        total += entry.size
        if total > MAX_BYTES:
            raise CheckpointError(
                where,
                f"the workspace holds more than {MAX_BYTES:,} bytes (at {entry.path!r})",
                "a restore is capped so a hostile archive cannot fill the disk",
            )
    # One tree of the entries' path components, so each check below walks a path once: linear in
    # the index's size, where joining every prefix of every path was quadratic in its components.
    tree = _Node()
    for path, kind in kinds.items():
        node = tree
        for part in path.split("/"):
            node = node.child(part)
        node.kind, node.target = kind, links.get(path)
    for path in kinds:
        parts = path.split("/")
        node = tree
        for depth, part in enumerate(parts[:-1], 1):
            node = node.children[part]
            if node.kind not in (None, FOLDER):
                above = "/".join(parts[:depth])
                raise refused(where, path, f"lies below {above!r}, which is a {node.kind}, not a folder")
    for path, target in links.items():
        if not _stays_inside(path, target, tree):
            raise refused(
                where, path, f"is a link to {target!r}, which leaves the workspace through its other links"
            )


class _Node:
    """One path component of a workspace: what is there (`kind`, a link's `target`) and below it."""

    __slots__ = ("children", "kind", "target")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.kind: str | None = None  # None: only a folder implied by the paths below it
        self.target: str | None = None

    def child(self, part: str) -> _Node:
        found = self.children.get(part)
        if found is None:
            found = self.children[part] = _Node()
        return found


def refused(where: str, path: str, problem: str) -> CheckpointError:
    return CheckpointError(
        where,
        f"workspace entry {path!r} {problem}; refused the whole restore, nothing was written",
        "the fixture or trace is damaged or hostile: re-extract it from a trusted run",
    )


def _entry_problem(entry: Entry) -> str | None:
    problem = path_problem(entry.path)
    if problem is not None:
        return problem
    if len(entry.path) > MAX_PATH:
        return f"is longer than {MAX_PATH} characters"
    depth = entry.path.count("/") + 1
    if depth > MAX_DEPTH:
        return f"lies {depth:,} levels deep, deeper than the {MAX_DEPTH} a restore takes"
    problem = _too_long(entry.path, "its path")
    if problem is not None:
        return problem
    if entry.kind not in KINDS:
        return f"is a {entry.kind}; a workspace holds files, folders and links only"
    high = [name for bit, name in _HIGH_BITS.items() if entry.mode & bit]
    if high:
        return f"has the {' and '.join(high)} bit set (mode {entry.mode:04o})"
    if entry.mode & ~0o7777 or entry.mode < 0:
        return f"has a mode that is not a permission mode ({entry.mode:o})"
    if entry.kind == LINK:
        # Past the OS's limits a link cannot be made: refused here, so verify says so, not restore.
        if isinstance(entry.target, str) and (problem := _too_long(entry.target, "its link target")):
            return problem
        return link_problem(entry.path, entry.target)
    if entry.size < 0:
        return "has a negative size"
    return None


def _too_long(text: str, what: str) -> str | None:
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) > MAX_PATH:
        return f"has {what} {len(encoded):,} bytes long, over the system's limit of {MAX_PATH} (PATH_MAX)"
    longest = max(map(len, encoded.split(b"/")), default=0)
    if longest > MAX_NAME:
        return f"has {what} with a {longest}-byte name, over the system's limit of {MAX_NAME} (NAME_MAX)"
    return None


def stays_inside(name: str, target: str, links: Mapping[str, str]) -> bool:
    """Whether a link at `name` to `target` resolves inside the workspace, following the workspace's
    own `links` (path -> target) component by component, as the file system would."""
    tree = _Node()
    for path, link_target in links.items():
        node = tree
        for part in path.split("/"):
            node = node.child(part)
        node.kind, node.target = LINK, link_target
    return _stays_inside(name, target, tree)


def _stays_inside(name: str, target: str, tree: _Node) -> bool:
    # The resolved path is kept as a stack of tree nodes (None once it leaves every known path), so
    # each component costs one look-up: time linear in the target and the links it passes through.
    pending = target.replace("\\", "/").split("/")[::-1]
    folder = posixpath.dirname(name)
    stack: list[_Node | None] = []
    for part in folder.split("/") if folder else ():
        above = stack[-1] if stack else tree
        stack.append(above.children.get(part) if above is not None else None)
    hops = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                return False
            stack.pop()
            continue
        above = stack[-1] if stack else tree
        node = above.children.get(part) if above is not None else None
        if node is not None and node.kind == LINK and node.target is not None:
            hops += 1
            if hops > MAX_LINK_HOPS:
                return False  # a loop: treat as leaving, it resolves nowhere
            pending.extend(node.target.replace("\\", "/").split("/")[::-1])
            continue
        stack.append(node)
    return True


Content = Callable[[Entry], bytes]  # a file entry's bytes (checked against its sha256 by the caller)


def restore(
    workspace: Path, entries: Sequence[Entry], content: Content, where: str, *, checked: bool = False
) -> Path:
    """Write `entries` (checked first, unless the caller did: `checked`) as the new workspace
    `workspace`, which must not exist or be an empty folder. Returns the workspace's path; leaves
    nothing behind when anything fails."""
    if not checked:
        check_entries(entries, where)
    workspace = Path(workspace)
    _check_target(workspace)
    workspace.parent.mkdir(parents=True, exist_ok=True)
    scratch = _new_folder(workspace)
    try:
        write_entries(scratch, entries, content)
        if workspace.is_dir() and not workspace.is_symlink():
            workspace.rmdir()  # empty, checked above; a folder a test made for it
        os.rename(scratch, workspace)
    except BaseException:
        remove_tree(scratch)
        raise
    return workspace


def write_entries(root: Path, entries: Iterable[Entry], content: Content) -> None:
    """Folders and files first, links last, into `root` (a folder this process just made)."""
    links: list[Entry] = []
    made: set[str] = set()
    base = os.fspath(root)
    for entry in entries:
        if entry.kind == LINK:
            links.append(entry)
            continue
        folder = entry.path if entry.kind == FOLDER else posixpath.dirname(entry.path)
        if folder and folder not in made:
            _make_folders(base, folder)
            made.add(folder)
        if entry.kind == FOLDER:
            os.chmod(os.path.join(base, entry.path), (entry.mode & 0o777) | 0o700)
            continue
        data = content(entry)
        fd = os.open(os.path.join(base, entry.path), _WRITE, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, entry.mode & 0o777)
        finally:
            os.close(fd)
    for entry in links:
        folder = posixpath.dirname(entry.path)
        if folder and folder not in made:
            _make_folders(base, folder)
            made.add(folder)
        os.symlink(str(entry.target), root / entry.path)


def _make_folders(base: str, folder: str) -> None:
    # Not os.makedirs: it recurses once per component, and a path of 2,000 one-letter folders
    # (within PATH_MAX) would end the restore in a RecursionError.
    path = base
    for part in folder.split("/"):
        path = os.path.join(path, part)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)


def _check_target(workspace: Path) -> None:
    if workspace.is_symlink() or (workspace.exists() and not workspace.is_dir()):
        raise CheckpointError(
            workspace, "is not a folder", "a workspace is restored into a new or empty folder"
        )
    if workspace.is_dir():
        with os.scandir(workspace) as found:
            if next(found, None) is not None:
                raise CheckpointError(
                    workspace,
                    "is not empty",
                    "a workspace is restored into a new or empty folder (a test's tmp_path / 'workspace')",
                )


def _new_folder(workspace: Path) -> Path:
    """A new folder beside `workspace`, with the permissions a plain mkdir gives (the umask's)."""
    while True:
        scratch = workspace.with_name(f".{workspace.name}.restoring-{secrets.token_hex(4)}")
        try:
            os.mkdir(scratch, 0o777)
        except FileExistsError:
            continue
        return scratch
