"""A fixture's workspace: one tar archive of the whole workspace and its index, never a delta chain.

`workspace.tar` (uncompressed, members sorted by path, owners and times zeroed, so the same workspace
gives the same bytes) and `workspace.index.json`, one entry per member in the same order:
`{"path", "type": "file"|"dir"|"link", "mode": "0644", "size", "sha256"}` (a link: `"target"`).

Reading is checked twice over, before anything is written: the index entries by `restore.py`'s rules,
then every tar member by its type (hard links, devices, fifos and anything but a file, a folder or a
symbolic link are refused), its mode bits, `tarfile`'s own `data` filter, and against its index
entry (path, type, mode, size, target). File content is checked against the index's SHA-256 as it
is written; the manifest holds the index's own SHA-256, so the chain is whole.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import CheckpointError
from ..trace.loaders import load_json
from ..trace.paths import path_problem
from .restore import FILE, FOLDER, KINDS, LINK, MAX_ENTRIES, Entry, check_entries, refused, restore

ARCHIVE = "workspace.tar"
INDEX = "workspace.index.json"
INDEX_FORMAT = 1
MAX_INDEX_BYTES = 64 * 1024 * 1024
REEXTRACT = "re-extract the fixture"

_KIND_OF = {tarfile.REGTYPE: FILE, tarfile.AREGTYPE: FILE, tarfile.DIRTYPE: FOLDER, tarfile.SYMTYPE: LINK}
_REFUSED = {
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a fifo",
    tarfile.CONTTYPE: "a contiguous file",
    tarfile.GNUTYPE_SPARSE: "a sparse file",
}
_DATA_FILTER = getattr(tarfile, "data_filter", None)  # Python 3.11.4 and later
# Where the data filter imagines the archive extracted: a folder that does not exist, so its checks
# are about the archive's own names and links, not about whatever lies on this disk.
_FILTER_ROOT = os.path.join(os.sep, "agentevals-restore-check-does-not-exist")


# -- writing ------------------------------------------------------------------------------------


def write_archive(folder: Path, entries: Sequence[Entry], content: Mapping[str, bytes]) -> None:
    """Write `ARCHIVE` and `INDEX` into `folder`: every entry, in the order given (sorted by path)."""
    with tarfile.open(folder / ARCHIVE, "w", format=tarfile.PAX_FORMAT) as archive:
        for entry in entries:
            info = tarfile.TarInfo(entry.path)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            info.mode = entry.mode
            if entry.kind == LINK:
                info.type, info.linkname = tarfile.SYMTYPE, str(entry.target)
                archive.addfile(info)
            elif entry.kind == FOLDER:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                data = content[entry.path]
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    index = {"format": INDEX_FORMAT, "entries": [entry.to_json() for entry in entries]}
    (folder / INDEX).write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


# -- reading --------------------------------------------------------------------------------------


def _refuse_link(path: Path, where: str) -> None:
    """A fixture arrives in pull requests: a link where its archive or index should be would boot
    the workspace from (or read) a file outside the fixture, so it is refused."""
    if path.is_symlink():
        raise CheckpointError(
            where,
            f"{path.name} is a symbolic link (to {os.readlink(path)}); a fixture is booted from its "
            "own files only, never through a link",
            f"replace {path} with the real file, or delete it and {REEXTRACT}",
        )


def read_index(path: Path, where: str) -> list[Entry]:
    """The index's entries, each checked for shape (not yet for safety: `check_entries` does that)."""
    _refuse_link(path, where)
    try:
        if path.stat().st_size > MAX_INDEX_BYTES:
            raise CheckpointError(where, f"{path.name} is larger than {MAX_INDEX_BYTES:,} bytes", REEXTRACT)
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(where, f"{path.name} is missing", REEXTRACT) from None

    def fail(line: int, problem: str) -> CheckpointError:
        return CheckpointError(where, f"{path.name} is not JSON (line {line}: {problem})", REEXTRACT)

    data = load_json(raw, fail)
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise CheckpointError(where, f"{path.name} needs an object with a list of entries")
    if data.get("format") != INDEX_FORMAT:
        raise CheckpointError(
            where, f"{path.name}: index format {data.get('format')!r} is not {INDEX_FORMAT}"
        )
    raw = data["entries"]
    if len(raw) > MAX_ENTRIES:
        raise CheckpointError(where, f"{path.name} lists {len(raw)} entries, over the cap of {MAX_ENTRIES:,}")
    return [_entry(item, number, path.name, where) for number, item in enumerate(raw, 1)]


def _entry(item: Any, number: int, file: str, where: str) -> Entry:
    def bad(problem: str) -> CheckpointError:
        return CheckpointError(where, f"{file}: entry {number} {problem}", REEXTRACT)

    if not isinstance(item, dict) or not isinstance(item.get("path"), str):
        raise bad("needs a path")
    kind = item.get("type")
    if kind not in KINDS:
        raise bad(f"({item['path']!r}) has type {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == LINK:
        if not isinstance(item.get("target"), str):
            raise bad(f"({item['path']!r}) is a link without a target")
        return Entry(item["path"], LINK, 0o777, target=item["target"])
    mode = item.get("mode")
    if not isinstance(mode, str) or not mode.isdigit() or any(c in "89" for c in mode):
        raise bad(f'({item["path"]!r}) has mode {mode!r}; expected octal digits, e.g. "0644"')
    if kind == FOLDER:
        return Entry(item["path"], FOLDER, int(mode, 8))
    size, digest = item.get("size"), item.get("sha256")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise bad(f"({item['path']!r}) has size {size!r}; expected a whole number of bytes")
    if not isinstance(digest, str) or len(digest) != 64:
        raise bad(f"({item['path']!r}) has no SHA-256")
    return Entry(item["path"], FILE, int(mode, 8), size, digest)


class Archive:
    """A fixture's workspace archive, read against its index: `members()` checks every member before
    anything is written, `restore()` writes the workspace, `check()` reads it all without writing."""

    def __init__(self, folder: Path, where: str) -> None:
        self.folder = folder
        self.where = where
        self.entries = read_index(folder / INDEX, where)

    def _open(self) -> tarfile.TarFile:
        path = self.folder / ARCHIVE
        _refuse_link(path, self.where)
        try:
            return tarfile.open(path, "r:")  # uncompressed only: no decompression bomb
        except FileNotFoundError:
            raise CheckpointError(self.where, f"{ARCHIVE} is missing", REEXTRACT) from None
        except (tarfile.TarError, OSError) as exc:
            raise CheckpointError(
                self.where, f"{ARCHIVE} is not an uncompressed tar archive ({exc})", REEXTRACT
            ) from None

    def members(self, archive: tarfile.TarFile) -> dict[str, tarfile.TarInfo]:
        """Every member, checked against its rules and its index entry, by path. Refuses (naming the
        member) the first one that is hostile or not what the index says; reads no content."""
        check_entries(self.entries, self.where)
        found: dict[str, tarfile.TarInfo] = {}
        expected = iter(self.entries)
        opened: Any = archive.fileobj  # the archive's file, opened by _open (typed as a protocol)
        end = os.fstat(opened.fileno()).st_size
        try:
            for member in archive:
                entry = next(expected, None)
                if entry is None:
                    raise refused(self.where, member.name, f"is in {ARCHIVE} but not in its index")
                self._check_member(member, entry)
                if member.isfile() and member.offset_data + member.size > end:
                    raise refused(
                        self.where, member.name, f"claims {member.size} bytes, past the end of {ARCHIVE}"
                    )
                found[member.name] = member
        except tarfile.TarError as exc:
            raise CheckpointError(self.where, f"{ARCHIVE} is damaged ({exc})", REEXTRACT) from None
        missing = next(expected, None)
        if missing is not None:
            raise CheckpointError(
                self.where,
                f"{ARCHIVE} lacks {missing.path!r}, which its index lists",
                REEXTRACT,
            )
        return found

    def _check_member(self, member: tarfile.TarInfo, entry: Entry) -> None:
        name = member.name
        problem = path_problem(name) if name != entry.path else None  # the index's paths passed already
        if problem is not None:
            raise refused(self.where, name, problem)
        kind = _KIND_OF.get(member.type)
        # A PAX sparse member (GNU.sparse.* headers) is a regular file by its type, but its map makes
        # a small archive claim a large file; we never write one, so none is ours. Any such header
        # counts, not only a whole map tarfile recognizes: `GNU.sparse.realsize` alone sets the size.
        sparse = member.issparse() or any(key.startswith("GNU.sparse.") for key in member.pax_headers)
        if kind is None or sparse:
            what = _REFUSED.get(member.type, f"of tar type {member.type!r}")
            if sparse:
                what = "a sparse file"
            raise refused(self.where, name, f"is {what}; a workspace holds files, folders and links only")
        high = member.mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX)
        if high:
            bits = [
                n
                for b, n in ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid"), (stat.S_ISVTX, "sticky"))
                if high & b
            ]
            raise refused(self.where, name, f"has the {' and '.join(bits)} bit set (mode {member.mode:04o})")
        if _DATA_FILTER is not None:
            try:
                _DATA_FILTER(member, _FILTER_ROOT)
            except tarfile.FilterError as exc:
                raise refused(self.where, name, f"is refused by tarfile's data filter ({exc})") from None
        member_entry = Entry(
            name,
            kind,
            0o777 if kind == LINK else member.mode & 0o7777,
            member.size if kind == FILE else 0,
            entry.sha256,
            member.linkname if kind == LINK else None,
        )
        if member_entry != entry:
            raise refused(
                self.where,
                name,
                f"differs from its index entry ({_difference(member_entry, entry)}): the archive or the "
                "index was changed",
            )

    def _content(
        self, archive: tarfile.TarFile, members: Mapping[str, tarfile.TarInfo], entry: Entry
    ) -> bytes:
        member = members[entry.path]
        # A plain member of an uncompressed archive is its bytes at its offset (what extractfile
        # reads, without its wrapper for each file).
        archive.fileobj.seek(member.offset_data)
        data = archive.fileobj.read(member.size)
        if len(data) != entry.size or hashlib.sha256(data).hexdigest() != entry.sha256:
            raise CheckpointError(
                self.where,
                f"{ARCHIVE}: {entry.path!r} was tampered with: its SHA-256 is not the one {INDEX} records",
                "restore the fixture from version control, or re-extract it",
            )
        return data

    def restore(self, workspace: Path) -> Path:
        """The workspace restored into `workspace` (new, or an empty folder): whole, or nothing."""
        with self._open() as archive:
            members = self.members(archive)  # checks the index's entries, then every member
            return restore(
                workspace,
                self.entries,
                lambda e: self._content(archive, members, e),
                self.where,
                checked=True,
            )

    def check(self) -> None:
        """Read every member and its content against the index, writing nothing (for `verify`)."""
        with self._open() as archive:
            members = self.members(archive)
            for entry in self.entries:
                if entry.kind == FILE:
                    self._content(archive, members, entry)

    def iter_files(self) -> Iterator[Entry]:
        return (entry for entry in self.entries if entry.kind == FILE)


def _difference(found: Entry, indexed: Entry) -> str:
    for field, label in (
        ("path", "path"),
        ("kind", "type"),
        ("mode", "mode"),
        ("size", "size"),
        ("target", "target"),
    ):
        a, b = getattr(found, field), getattr(indexed, field)
        if a != b:
            if field == "mode":
                return f"mode {a:04o} in the archive, {b:04o} in the index"
            return f"{label} {a!r} in the archive, {b!r} in the index"
    return "?"
