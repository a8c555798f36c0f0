"""Scanning what the project keeps for something secret-shaped (`agentevals scan [PATHS]`).

Looks for what the recorder scrubs (`trace/scrub.py`): API-key patterns, bearer tokens and the
values of the current environment's `*_API_KEY`, `*TOKEN*`, `*SECRET*` and `*PASSWORD*` variables,
raw, JSON-escaped or percent-encoded. By default it reads the cassette, goldens and fixtures
directories and the history database; what it reads in each kind of file is in docs/security.md.
Each finding is `file:line: what` (`file::member:line` inside an archive, `file:table.column:rowid`
in a database), with only the value's length, never a character of it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import sqlite3
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from ..recording.providers.anthropic import parse_sse
from ..settings import Settings
from ..trace import streams
from ..trace.loaders import load_json
from ..trace.scrub import Scrubber

DATABASE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
# What a scan never descends into: version control, environments, caches.
SKIPPED_DIRS = frozenset(
    {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
)
# An archive is read without extracting anything, and never without bound: members past these
# limits are reported as not scanned (a finding, so the scan fails rather than passing blind).
MAX_FILE_BYTES = 1024 * 1024 * 1024
MAX_MEMBERS = 100_000
MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_ARCHIVE_BYTES = 1024 * 1024 * 1024
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # composing only: nothing is built


def mask(value: str) -> str:
    """What a finding says of a value: its length only. Not one character of it, since a key's
    first characters are the ones that tell its kind and narrow a guess (issue 35)."""
    return f"({len(value)} characters)"


def files(paths: list[Path]) -> Iterator[Path]:
    """Every file below `paths` (links included, as links), in sorted order."""
    for path in paths:
        if not path.is_dir() or path.is_symlink():
            yield path
            continue
        for root, dirs, names in os.walk(path):  # never into a linked folder
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            for name in sorted(names):
                yield Path(root) / name


def _unparsed(line: int, problem: str) -> ValueError:
    # A line the bounded loader refuses (too deep, a huge number) is still scanned as text.
    return ValueError(problem)


class Scanner:
    """Collects findings, each as `where: what (N characters)`, once per place and value."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        self.scrubber = Scrubber(environ=environ)
        self.findings: list[str] = []
        self._seen: set[str] = set()

    def _unread(self, line: str) -> None:
        """A file that could not be read: a finding too (a scan never passes blind)."""
        self.findings.append(self.scrubber.scrub_text(line))

    def _add(self, where: str, what: str, value: str) -> None:
        # `where` names a file, a member, a row: a secret in a name is reported, never printed.
        line = f"{self.scrubber.scrub_text(where)}: {what} {mask(value)}"
        key = f"{line}\0{value}"  # two secrets alike in kind and length are two findings
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(line)

    def text(self, where: str, text: str, known: set[str] | None = None) -> set[str]:
        """Finds secrets in `text`, reporting those not in `known`; returns what it found."""
        found = set()
        for start, end, what in self.scrubber.find(text):
            value = text[start:end]
            found.add(value)
            if known is None or value not in known:
                self._add(where, what, value)
        return found

    def data(self, where: str, data: bytes) -> None:
        for start, end, what in self.scrubber.find_bytes(data):
            self._add(where, what, data[start:end].decode("latin-1"))

    def lines(self, where: str, text: str) -> None:
        """Each line as it is; JSON lines also parsed, for streams and base64 bodies."""
        raw: set[str] = set()
        for number, line in enumerate(text.splitlines(), 1):
            raw |= self.text(f"{where}:{number}", line)
            if line.startswith("{"):
                try:
                    parsed = load_json(line, _unparsed)
                except ValueError:
                    continue
                self.structure(f"{where}:{number}", parsed)
        if where.endswith((".yaml", ".yml")):
            self.yaml(where, text, raw)
        elif where.endswith(".json"):
            with contextlib.suppress(ValueError):
                self.structure(where, load_json(text, _unparsed))

    def structure(self, where: str, value: Any) -> None:
        """In parsed JSON: the joined text of every stored stream, and every base64 body."""
        pending = [value]
        while pending:
            item = pending.pop()
            if isinstance(item, dict):
                sse = item.get("sse")
                if isinstance(sse, list):
                    self.stream(where, sse)
                encoded = item.get("base64")
                if isinstance(encoded, str):
                    self.base64(where, encoded)
                pending.extend(item.values())
            elif isinstance(item, list):
                pending.extend(item)

    def stream(self, where: str, events: list[Any]) -> None:
        for pieces in streams.blocks(events):
            self.text(where, streams.joined(pieces))

    def base64(self, where: str, encoded: str) -> None:
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            return
        self.data(where, data)

    def yaml(self, where: str, text: str, raw: set[str]) -> None:
        """A YAML file's strings as YAML decodes them (a folded or escaped key is whole there; one
        found on a line already is not reported again), and the joined streams of the SSE bodies a
        vcrpy cassette stores. Nodes are walked once each, so aliases cost nothing."""
        try:
            roots = list(yaml.compose_all(text, Loader=_YAML_LOADER))
        except yaml.YAMLError:
            return  # not YAML we can read: its lines were scanned as they are
        pending: list[yaml.Node | None] = list(roots)
        seen: set[int] = set()
        while pending:
            node = pending.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, yaml.ScalarNode):
                at = f"{where}:{node.start_mark.line + 1}"
                value = str(node.value)
                if node.tag == "tag:yaml.org,2002:binary":
                    self.base64(at, "".join(value.split()))
                    continue
                self.text(at, value, raw)
                if "content_block_delta" in value:
                    self.stream(at, parse_sse(value.encode("utf-8")))
            elif isinstance(node, yaml.SequenceNode):
                pending.extend(node.value)
            elif isinstance(node, yaml.MappingNode):
                for key, item in node.value:
                    pending.extend((key, item))

    def file(self, path: Path) -> None:
        """One file: a database or an archive by its name; anything else as text line by line, or
        as bytes when it is not UTF-8. A link is scanned as its target text, never followed."""
        name = path.name
        self.text(f"{path} (its path)", str(path))  # a name holds a secret as well as content
        if path.is_symlink():
            self.text(str(path), os.readlink(path))
            return
        if not path.is_file():
            return  # a socket, a FIFO: nothing stored
        if path.stat().st_size > MAX_FILE_BYTES:
            self._unread(f"{path}: not scanned: {path.stat().st_size} bytes, over the bound")
        elif name.endswith(DATABASE_SUFFIXES):
            self.database(path)
        elif name.endswith(ARCHIVE_SUFFIXES):
            self.archive(path)
        else:
            data = path.read_bytes()
            try:
                self.lines(str(path), data.decode("utf-8"))
            except UnicodeDecodeError:
                self.data(str(path), data)

    def database(self, path: Path) -> None:
        """Every text (and blob) column of every table, read-only."""
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            self._unread(f"{path}: not scanned: cannot open the database ({exc})")
            return
        try:
            # Read-only, so no trigger fires; and no function with side effects runs from the schema
            # (a generated column, a view) of a database that arrived in a pull request.
            conn.execute("PRAGMA trusted_schema = OFF")
            tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                quoted = '"' + table.replace('"', '""') + '"'
                columns = [row[1] for row in conn.execute(f"PRAGMA table_info({quoted})")]
                rows: Iterator[tuple[Any, ...]]
                try:
                    rows = conn.execute(f"SELECT rowid, * FROM {quoted}")
                except sqlite3.OperationalError:  # a WITHOUT ROWID table: rows by position
                    rows = (
                        (number, *row)
                        for number, row in enumerate(conn.execute(f"SELECT * FROM {quoted}"), 1)
                    )
                for row in rows:
                    for column, value in zip(columns, row[1:], strict=False):
                        where = f"{path}:{table}.{column}:{row[0]}"
                        if isinstance(value, str):
                            self.text(where, value)
                        elif isinstance(value, bytes):
                            self.data(where, value)
        except sqlite3.Error as exc:
            self._unread(f"{path}: not scanned: cannot read the database ({exc})")
        finally:
            conn.close()

    def archive(self, path: Path) -> None:
        """Every member of a tar archive, read in memory, never extracted; link targets as text.

        Bounded: reading a compressed archive means decompressing it, so the scan stops (and says
        so) before going past MAX_ARCHIVE_BYTES of content or MAX_MEMBERS members."""
        try:
            with tarfile.open(path, "r:*") as archive:
                for count, member in enumerate(archive, 1):
                    where = f"{path}::{member.name}"
                    if count > MAX_MEMBERS or member.offset_data + member.size > MAX_ARCHIVE_BYTES:
                        self._unread(f"{where}: not scanned: the archive is over the scan's bounds")
                        return
                    self.text(where, member.name)
                    if member.issym() or member.islnk():
                        self.text(where, member.linkname)
                    if not member.isfile():
                        continue
                    if member.size > MAX_MEMBER_BYTES:
                        self._unread(f"{where}: not scanned: {member.size} bytes, over the bound")
                        continue
                    handle = archive.extractfile(member)
                    data = handle.read(MAX_MEMBER_BYTES) if handle is not None else b""
                    try:
                        self.lines(where, data.decode("utf-8"))
                    except UnicodeDecodeError:
                        self.data(where, data)
        except (tarfile.TarError, OSError, EOFError) as exc:
            self._unread(f"{path}: not scanned: not a readable tar archive ({exc})")


def scan(paths: list[Path], environ: dict[str, str] | None = None) -> list[str]:
    """Every finding, as `where: what (N characters)`."""
    scanner = Scanner(environ)
    for path in files(paths):
        scanner.file(path)
    return scanner.findings


def default_paths(settings: Settings) -> list[Path]:
    """What a bare `agentevals scan` reads: those of the configured places that exist."""
    places = [settings.cassettes_dir, settings.goldens_dir, settings.fixtures_dir]
    if isinstance(settings.history, Path):  # a database URL is no file to scan
        places.append(settings.history)
    here = Path.cwd()
    return [
        place.relative_to(here) if place.is_relative_to(here) else place for place in places if place.exists()
    ]


def verdict(findings: list[str], scanned: int) -> str:
    """The line under the findings: how many, in how many files, and what to do about them."""
    if findings:
        return (
            f"agentevals scan: {len(findings)} secret-shaped value(s) in {scanned} file(s) scanned. Rotate "
            "any real key, then re-record or scrub the file (agentevals promote scrubs what it copies)"
        )
    return f"agentevals scan: no secrets in {scanned} file(s)"
