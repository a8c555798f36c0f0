"""`agentevals promote TRACE --name NAME`: an incident becomes a replay test (`replay/promote.py`).

Copies a recorded run into the cassette directory as `NAME.trace.jsonl`, scrubbed of secrets, and
writes `test_replay_NAME.py`, a replay test of it. Nothing existing is overwritten unless `--force`
says so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..replay import MODES
from ..replay.promote import allow_hint, check_name, promote, write_test
from .common import add_renamed, add_setting, settings_of


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "promote",
        help="copy a recorded run into the cassettes, scrubbed, and write a replay test for it",
        description="Turn a recorded run (an incident) into a regression test: TRACE is copied, scrubbed "
        "of secrets, to CASSETTE_DIR/NAME.trace.jsonl, and TEST_DIR/test_replay_NAME.py replays it.",
    )
    parser.add_argument("trace", help="the recorded run (.trace.jsonl)")
    parser.add_argument("--name", required=True, help="the cassette's name (letters, digits, - _ .)")
    parser.add_argument(
        "--replay-mode",
        choices=MODES,
        help="the test's replay mode (default: [tool.agentevals] replay_mode)",
    )
    add_renamed(parser, "--replay-mode", ["--mode"], dest="replay_mode", choices=MODES)
    add_setting(
        parser,
        "cassettes_dir",
        metavar="DIR",
        help="default: [tool.agentevals] cassettes_dir; a relative path is taken from the project root "
        "(the folder of the nearest pyproject.toml), as the setting's is",
    )
    parser.add_argument(
        "--test-dir", default="tests", help="where the test file goes, from the project root (default: tests)"
    )
    parser.add_argument(
        "--no-test", action="store_true", help="copy the cassette only (it is collected anyway)"
    )
    parser.add_argument("--force", action="store_true", help="replace an existing cassette of that name")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    check_name(args.name)
    settings = settings_of(args)
    source = Path(args.trace)
    promoted = promote(source, args.name, settings, force=args.force)
    print(promoted.text())
    if not args.no_test:
        test = write_test(
            settings.rootdir / args.test_dir, args.name, settings.replay_mode, source, promoted.task
        )
        print(test.text(), file=sys.stderr if test.existed else sys.stdout)
        hint = allow_hint(promoted.task, settings)
        if hint is not None:
            print(hint)
    return 0
