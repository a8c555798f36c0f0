"""`agentevals resume extract|list|show|verify|bless`: checkpoint fixtures from the command line.

- `extract TRACE --at STEP|latest --name NAME`: a fixture from a recorded run's checkpoint at or
  before STEP, scrubbed of secrets, written whole into `<fixtures_dir>/NAME/`;
- `list`: the fixtures, with their step, progress, workspace size and source run;
- `show NAME`: lineage, contract, state keys, workspace size, and the run up to the checkpoint;
- `verify [NAME...]`: hashes, format and the contract against this environment; exit 1 on any
  problem (the merge gate);
- `bless NAME --reason TEXT`: accept the drift of this environment into the fixture's contract,
  keeping the reason in the manifest's history.

Exit codes: 0 ok, 1 `verify` found problems, 2 bad input (a missing trace, an unknown fixture...).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..resume import render
from ..resume.bless import bless
from ..resume.extraction import extract
from ..resume.fixture import TRACE, check_name
from ..resume.store import open_fixture, survey
from ..resume.verify import verify
from ..trace.summary import summarize
from .common import add_format, add_setting, settings_of


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "resume",
        help="checkpoint fixtures: extract one from a trace, list, show, verify, bless a drift",
        description="Checkpoint fixtures for the resume layer (docs/resume.md): a recorded run's mid-run "
        "state, workspace, environment contract and lineage, booted by @pytest.mark.resume tests. "
        "Exit codes: 0 ok, 1 verify found problems, 2 bad input.",
    )
    commands = parser.add_subparsers(dest="resume_command", metavar="ACTION", required=True)

    ext = commands.add_parser(
        "extract",
        help="make a fixture from a recorded run's checkpoint",
        description="Copy the checkpoint at or before STEP of a recorded run into FIXTURES_DIR/NAME/: its "
        "state, its whole workspace, the environment contract, lineage and the run up to it, scrubbed "
        "of secrets. Written into a scratch folder and renamed into place, the manifest last.",
    )
    ext.add_argument("trace", help="the recorded run (.trace.jsonl)")
    ext.add_argument(
        "--at",
        required=True,
        metavar="STEP|latest",
        help="the step: the last checkpoint at or before it is taken; 'latest' takes the run's last",
    )
    ext.add_argument("--name", required=True, help="the fixture's name (letters, digits, - _ .)")
    ext.add_argument(
        "--continuation",
        action="store_true",
        help="keep the recorded rest of the run too, so the fixture can be resumed with "
        'mode="replayed" (offline, against the recording)',
    )
    ext.add_argument(
        "--files-from",
        type=Path,
        metavar="DIR",
        help="a folder holding the workspace as it was at that checkpoint, for the files the trace keeps "
        "only the hash of (over 256 KiB); each is checked against the recorded SHA-256",
    )
    ext.add_argument("--force", action="store_true", help="replace an existing fixture of that name")
    _places(ext)
    add_format(ext, ("text", "json"))
    ext.set_defaults(func=run_extract)

    lst = commands.add_parser(
        "list",
        help="the fixtures and what each holds",
        description="Every fixture under FIXTURES_DIR: its step, verified progress, workspace size, "
        "source run, and whether it can be resumed in replayed mode. Folders without a manifest "
        "(an interrupted extraction) are listed as incomplete.",
    )
    _places(lst)
    add_format(lst, ("text", "json", "markdown"))
    lst.set_defaults(func=run_list)

    shw = commands.add_parser(
        "show",
        help="one fixture: lineage, contract, state, workspace, the run up to it",
        description="One fixture in full: where it comes from (lineage), its environment contract, the "
        "keys of its state, its workspace's size, and a summary of the run up to the checkpoint.",
    )
    shw.add_argument("name", help="the fixture's name (or a path to its folder)")
    _places(shw)
    add_format(shw, ("text", "json"))
    shw.set_defaults(func=run_show)

    ver = commands.add_parser(
        "verify",
        help="check fixtures' hashes, format and contract; exit 1 on any problem",
        description="Check each fixture (every one under FIXTURES_DIR by default): its manifest and "
        "format version, every file against its SHA-256, the state is JSON, every workspace member "
        "against the index, the traces readable, and the contract's Python and package versions "
        "against this environment (the keys the harness declares, and those its requests show, are "
        "checked when a test resumes it). Exit 1 when anything is wrong: the merge gate.",
    )
    ver.add_argument("names", nargs="*", metavar="NAME", help="fixtures to check (default: all)")
    _places(ver)
    _contract_settings(ver)
    add_format(ver, ("text", "json"))
    ver.set_defaults(func=run_verify)

    bls = commands.add_parser(
        "bless",
        help="accept this environment's drift into a fixture's contract, with a reason",
        description="Record in the fixture's contract the values this environment has where they drifted "
        "(Python, package versions) and any --key given, keeping the old values and the reason in "
        "the manifest's history. The fixture's SHA-256 changes; its files do not.",
    )
    bls.add_argument("name", help="the fixture's name (or a path to its folder)")
    bls.add_argument("--reason", required=True, help="why the drift is harmless (kept in the history)")
    bls.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="also record this value for a contract key (VALUE as JSON, else text), e.g. a declared key "
        "or model=claude-sonnet-4-6 (repeatable)",
    )
    _places(bls)
    add_format(bls, ("text", "json"))
    bls.set_defaults(func=run_bless)


def _places(parser: argparse.ArgumentParser) -> None:
    add_setting(parser, "fixtures_dir", metavar="DIR")


def _contract_settings(parser: argparse.ArgumentParser) -> None:
    add_setting(parser, "contract_policy", metavar="POLICY")
    add_setting(parser, "contract_tolerate", metavar="KEY[:LEVEL],...")


def run_extract(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    check_name(args.name)
    fixture, redactions = extract(
        Path(args.trace),
        args.at,
        args.name,
        settings.fixtures_dir,
        continuation=args.continuation,
        files_from=args.files_from,
        force=args.force,
    )
    print(render.extracted(fixture, redactions, args.format))
    return 0


def run_list(args: argparse.Namespace) -> int:
    print(render.listing(survey(settings_of(args).fixtures_dir), args.format))
    return 0


def run_show(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    fixture = open_fixture(args.name, settings.fixtures_dir, Path.cwd())
    state = fixture.state()
    print(render.details(fixture, state, summarize(fixture.file(TRACE)), args.format))
    return 0


def run_verify(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    checks = verify(settings, args.names, Path.cwd())
    print(render.verified(checks, settings.fixtures_dir, args.format))
    return 0 if all(check.ok for check in checks) else 1


def run_bless(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    fixture = open_fixture(args.name, settings.fixtures_dir, Path.cwd())
    print(render.blessed(fixture, bless(fixture, args.reason, args.key), args.format))
    return 0
