"""`agentevals scan [PATHS]`: fail when a file the project keeps holds something secret-shaped.

The scan is `report/scan.py`'s; what it reads in each kind of file is in docs/security.md. Prints
each finding as `file:line: what (N characters)`, never a character of the value, and exits 1 when
there is any.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..report.scan import default_paths, files, scan, verdict
from .common import settings_of


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "scan",
        help="fail if a cassette, golden, fixture or the history holds a secret-shaped string",
        description="Scan cassettes, goldens, checkpoint fixtures and the history database for API-key "
        "patterns, bearer tokens and values of the environment's *_API_KEY / *TOKEN* / *SECRET* / "
        "*PASSWORD* variables. Exit 1 if any is found.",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or folders (default: [tool.agentevals] cassettes_dir, goldens_dir, fixtures_dir "
        "and history)",
    )
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if args.paths:
        paths = [Path(p) for p in args.paths]
        missing = [p for p in paths if not p.exists()]
        if missing:
            print(f"agentevals scan: error: {missing[0]}: no such file or folder", file=sys.stderr)
            return 2
    else:
        paths = default_paths(settings_of(args))
    found = scan(paths)
    if found:
        print("\n".join(found))
    print(verdict(found, sum(1 for _ in files(paths))), file=sys.stderr)
    return 1 if found else 0
