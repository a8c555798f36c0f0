"""`agentevals flaky`: ingest CI results, report flakiness per layer, check the budgets in CI.

    agentevals flaky ingest 'results/**/*.xml' --sha SHA --run-id ID
    agentevals flaky report [--format text|json|markdown]
    agentevals flaky check [--layer step ...]     # exit code 6 on a breach

Settings come from `[tool.agentevals]` in the nearest pyproject.toml (history, quarantine,
flaky_budget), overridden by the options here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

from ..errors import HistoryError
from ..history import ci_env, quarantine
from ..history.analysis import FlakinessReport, analyze
from ..history.budgets import FLAKY_EXIT_CODE
from ..history.ingest import Ingester, expand
from ..history.report import markdown, text_lines, to_json
from ..history.sqlite import SQLiteStore
from ..layers import LAYER_NAMES
from ..settings import Settings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "flaky",
        help="ingest CI results, report flakiness per layer, check the budgets",
        description="Per-layer flakiness from the test-outcome history.",
    )
    commands = parser.add_subparsers(dest="flaky_command", metavar="ACTION", required=True)

    ingest = commands.add_parser("ingest", help="load JUnit XML files from CI into the history")
    ingest.add_argument(
        "patterns", nargs="+", metavar="PATTERN", help="files or quoted globs (** spans folders)"
    )
    ingest.add_argument("--sha", help="the commit the files ran (default: from the CI, else git HEAD)")
    ingest.add_argument(
        "--run-id", help="the CI run they belong to (default: from the CI, else each file is a run)"
    )
    ingest.add_argument("--branch", help="the branch (default: from the CI, else git)")
    ingest.add_argument(
        "--rootdir", type=Path, help="where test files live, to map JUnit names back to node ids"
    )
    _common(ingest)
    ingest.set_defaults(func=run_ingest)

    report = commands.add_parser("report", help="the per-layer flakiness table")
    report.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    _common(report)
    report.set_defaults(func=run_report)

    check = commands.add_parser("check", help=f"exit {FLAKY_EXIT_CODE} when a budget is breached")
    check.add_argument(
        "--layer",
        action="append",
        choices=LAYER_NAMES,
        help="judge only this layer (repeatable; default: every layer)",
    )
    _common(check)
    check.set_defaults(func=run_check)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--history", metavar="PATH", help="the history database (default: from pyproject)")
    parser.add_argument("--quarantine", metavar="PATH", help="the quarantine file (default: from pyproject)")


def _settings(args: argparse.Namespace) -> Settings:
    cli = {
        "history": args.history,
        "quarantine": args.quarantine,
        "sha": getattr(args, "sha", None),
        "run_id": getattr(args, "run_id", None),
    }
    return Settings.for_command_line(cli)


def _history(settings: Settings, *, create: bool) -> Path:
    if settings.history is None:
        raise HistoryError("the history is off ([tool.agentevals] history = 'off'); give --history PATH")
    if not create and not settings.history.exists():
        raise HistoryError(
            f"{settings.history}: no history there yet; run pytest with the plugin, or "
            "`agentevals flaky ingest`, first (or give --history PATH)"
        )
    return settings.history


def run_ingest(args: argparse.Namespace) -> int:
    settings = _settings(args)
    paths = expand(args.patterns)
    commit = ci_env.resolve(
        settings.rootdir, os.environ, sha=settings.sha, run_id=settings.run_id, branch=args.branch
    )
    where = "the option" if settings.sha else commit.provider
    print(
        f"filing under commit {commit.sha or 'unknown'} (from {where}), run {commit.run_id or 'one per file'}"
    )
    if commit.sha is None:
        print("no commit sha: the attempts are kept but never judged; give --sha")
    store = SQLiteStore(_history(settings, create=True))
    try:
        ingester = Ingester(store, args.rootdir or settings.rootdir, say=print)
        summary = ingester.ingest(paths, sha=commit.sha, run_id=commit.run_id, branch=commit.branch)
    finally:
        store.close()
    print(
        f"ingested {summary.stored} of {summary.files} files ({summary.attempts} attempts) into "
        f"{store.location}; {summary.already} already there, {summary.outage_runs} outage runs "
        f"skipped, {len(summary.errors)} unreadable"
    )
    return 2 if summary.errors else 0


def _analyze(args: argparse.Namespace) -> FlakinessReport:
    settings = _settings(args)
    quarantined = quarantine.load(settings.quarantine)
    store = SQLiteStore(_history(settings, create=False))
    try:
        return analyze(store, settings.flaky_budget, quarantined, dt.date.today())
    finally:
        store.close()


def run_report(args: argparse.Namespace) -> int:
    report = _analyze(args)
    if args.format == "json":
        print(json.dumps(to_json(report), indent=2))
    elif args.format == "markdown":
        print(markdown(report), end="")
    else:
        for text, _colour in text_lines(report):
            print(text)
    return 0


def run_check(args: argparse.Namespace) -> int:
    report = _analyze(args)
    layers = set(args.layer or LAYER_NAMES)
    breaches = report.layer_breaches(layers) + report.expired_breaches()
    for text, _colour in text_lines(report):
        print(text)
    if breaches:
        for line in breaches:
            print(f"BREACH {line}")
        print(f"flakiness budget breached: exit code {FLAKY_EXIT_CODE}")
        return FLAKY_EXIT_CODE
    print("flakiness within budget")
    return 0
