"""`agentevals scan [PATHS]`: fail when a cassette or trace holds something secret-shaped.

Looks for API-key patterns, bearer tokens and the values of the current environment's `*_API_KEY`,
`*TOKEN*`, `*SECRET*` and `*PASSWORD*` variables, line by line, in `*.jsonl`, `*.json`, `*.yaml`
and `*.yml` files. Prints each finding as `file:line: what`, with the value masked.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..recording.scrub import SECRET_PATTERNS, secret_env_values
from .common import settings_of

SCANNED_SUFFIXES = (".jsonl", ".json", ".yaml", ".yml")
# What a scan never descends into: version control, environments, caches.
SKIPPED_DIRS = frozenset(
    {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache"}
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "scan",
        help="fail if a cassette or trace holds a secret-shaped string (keys, tokens, secret env values)",
        description="Scan cassettes and traces for API-key patterns, bearer tokens and values of the "
        "environment's *_API_KEY / *TOKEN* / *SECRET* / *PASSWORD* variables. Exit 1 if any is found.",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or folders (default: [tool.agentevals] cassette_dir)"
    )
    parser.set_defaults(func=main)


def mask(value: str) -> str:
    return f"{value[:6]}…({len(value)} chars)" if len(value) > 8 else "…"


def secret_variables(environ: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(name, value) of the environment's secret-named variables worth looking for."""
    environ = dict(os.environ) if environ is None else environ
    values = set(secret_env_values(environ))
    return sorted((name, value) for name, value in environ.items() if value in values)


def findings(text: str, variables: list[tuple[str, str]]) -> list[str]:
    """What in one line looks secret, each as 'what: masked value'."""
    found: list[str] = []
    spans: list[tuple[int, int]] = []
    for pattern in SECRET_PATTERNS:
        for match in pattern.finditer(text):
            if any(match.start() < end and start < match.end() for start, end in spans):
                continue  # the same secret, matched by a broader pattern too
            spans.append(match.span())
            kind = "bearer token" if match.group(0).lower().startswith("bearer") else "API-key pattern"
            found.append(f"{kind}: {mask(match.group(0))}")
    for name, value in variables:
        if value in text:
            found.append(f"the value of ${name}: {mask(value)}")
    return found


def files(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_file():
            yield path
            continue
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            for name in sorted(names):
                if name.endswith(SCANNED_SUFFIXES):
                    yield Path(root) / name


def scan(paths: list[Path], environ: dict[str, str] | None = None) -> list[str]:
    """Every finding as `file:line: what`."""
    out: list[str] = []
    variables = secret_variables(environ)
    for path in files(paths):
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                out.extend(f"{path}:{number}: {what}" for what in findings(line, variables))
    return out


def main(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    paths = [Path(p) for p in args.paths] if args.paths else [settings.cassette_dir]
    missing = [p for p in paths if not p.exists()]
    if missing:
        print(f"agentevals scan: error: {missing[0]}: no such file or folder", file=sys.stderr)
        return 2
    found = scan(paths)
    scanned = sum(1 for _ in files(paths))
    for line in found:
        print(line)
    if found:
        print(
            f"agentevals scan: {len(found)} secret-shaped value(s) in {scanned} file(s) scanned. Rotate "
            "any real key, then re-record or scrub the file (agentevals promote scrubs what it copies)",
            file=sys.stderr,
        )
        return 1
    print(f"agentevals scan: no secrets in {scanned} file(s)", file=sys.stderr)
    return 0
