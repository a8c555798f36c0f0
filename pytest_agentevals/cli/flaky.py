"""`agentevals flaky`: ingest CI results, report flakiness per layer, check the budgets in CI.

    agentevals flaky ingest 'results/**/*.xml' --sha SHA --run-id ID
    agentevals flaky report [--format text|json|markdown | --json]
    agentevals flaky check [--layer step ...] [--format ... | --json]     # exit code 6 on a breach
    agentevals flaky migrate --to postgresql://... [--history PATH]     # an SQLite history, copied

Settings come from `[tool.agentevals]` in the nearest pyproject.toml (history, quarantine,
flaky_budget), overridden by the options here.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
from pathlib import Path
from typing import Any

from ..history import ci_env, quarantine
from ..history import report as render
from ..history.analysis import FlakinessReport, analyze
from ..history.backends import history_of, open_store
from ..history.budgets import FLAKY_EXIT_CODE
from ..history.ingest import Ingester, expand
from ..settings.layers import LAYER_NAMES
from .common import add_format, add_output, add_setting, settings_of


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "flaky",
        help="ingest CI results, report flakiness per layer, check the budgets",
        description="Per-layer flakiness from the test-outcome history: load JUnit XML from CI into it, "
        "report each layer's flaky rate against its budget, and fail a CI step on a breach.",
    )
    commands = parser.add_subparsers(dest="flaky_command", metavar="ACTION", required=True)

    ingest = commands.add_parser(
        "ingest",
        help="load JUnit XML files from CI into the history",
        description="Load JUnit XML files (pytest's --junitxml, reruns included) into the history, filed "
        "under a commit and a CI run. A file already there is skipped, so ingesting twice adds nothing.",
    )
    ingest.add_argument(
        "patterns", nargs="+", metavar="PATTERN", help="files or quoted globs (** spans folders)"
    )
    add_setting(ingest, "sha", help="the commit the files ran (default: from the CI, else git HEAD)")
    add_setting(
        ingest, "run_id", help="the CI run they belong to (default: from the CI, else each file is a run)"
    )
    ingest.add_argument("--branch", help="the branch (default: from the CI, else git)")
    ingest.add_argument(
        "--rootdir",
        type=Path,
        metavar="DIR",
        help="the project's root: JUnit names are mapped back to node ids of test files under it, and its "
        "pyproject.toml's [tool.agentevals] applies (default: the folder of the nearest pyproject.toml)",
    )
    _common(ingest)
    ingest.set_defaults(func=run_ingest)

    report = commands.add_parser(
        "report",
        help="the per-layer flakiness table",
        description="Each layer's flaky rate with its 95% interval, its budget and false-red runs, the "
        "worst offenders, tests outside the pyramid and the quarantine.",
    )
    add_format(report, ("text", "json", "markdown"))
    _judging(report)
    report.set_defaults(func=run_report)

    check = commands.add_parser(
        "check",
        help=f"exit {FLAKY_EXIT_CODE} when a budget is breached",
        description=f"The report, then exit {FLAKY_EXIT_CODE} when a layer is over its flakiness budget or a "
        "quarantine entry has expired (2 on an error, 0 within budget): a CI step's gate.",
    )
    check.add_argument(
        "--layer",
        action="append",
        choices=LAYER_NAMES,
        help="judge only this layer (repeatable; default: every layer)",
    )
    add_format(check, ("text", "json", "markdown"))
    _judging(check)
    check.set_defaults(func=run_check)

    migrate = commands.add_parser(
        "migrate",
        help="copy the SQLite history into PostgreSQL",
        description="Copy every source and attempt of an SQLite history (--history, else the setting) into "
        "the history at --output (a postgresql:// URL; $AGENTEVALS_HISTORY when not given). Each source is "
        "copied whole in one transaction and at most once, so running it again (or after a failure) "
        "copies only what is missing. The SQLite file is only read (one of an older schema is upgraded in "
        "place first).",
    )
    add_output(
        migrate,
        "the PostgreSQL history to copy into (default: $AGENTEVALS_HISTORY)",
        old=["--to"],
        metavar="URL",
    )
    add_setting(migrate, "history", metavar="PATH", help="the SQLite history to copy (default: the setting)")
    add_setting(migrate, "db_timeouts")
    migrate.set_defaults(func=run_migrate)


def _common(parser: argparse.ArgumentParser) -> None:
    add_setting(parser, "history", metavar="PATH")
    add_setting(parser, "quarantine", metavar="PATH")
    add_setting(parser, "db_timeouts")


def _judging(parser: argparse.ArgumentParser) -> None:
    _common(parser)
    add_setting(parser, "flaky_budget")
    add_setting(parser, "budget_stops", metavar="exclude|fail")


def run_ingest(args: argparse.Namespace) -> int:
    settings = settings_of(args, args.rootdir)
    paths = expand(args.patterns)
    commit = ci_env.resolve_commit(
        settings.rootdir, os.environ, sha=settings.sha, run_id=settings.run_id, branch=args.branch
    )
    print(render.filing(commit, settings.sources["sha"]))
    store = open_store(history_of(settings, create=True))
    try:
        ingester = Ingester(store, settings.rootdir, say=print)
        summary = ingester.ingest(paths, sha=commit.sha, run_id=commit.run_id, branch=commit.branch)
    finally:
        store.close()
    print(render.ingested(summary, store.location))
    return 2 if summary.errors else 0


def _analyze(args: argparse.Namespace) -> FlakinessReport:
    settings = settings_of(args)
    quarantined = quarantine.load(settings.quarantine)
    store = open_store(history_of(settings, create=False))
    try:
        return analyze(store, settings.flaky_budget, quarantined, dt.date.today(), settings.budget_stops)
    finally:
        store.close()


def run_report(args: argparse.Namespace) -> int:
    print(render.rendered(_analyze(args), args.format))
    return 0


def run_check(args: argparse.Namespace) -> int:
    report = _analyze(args)
    layers = [name for name in LAYER_NAMES if name in set(args.layer or LAYER_NAMES)]
    breaches = report.layer_breaches(layers) + report.expired_breaches()
    print(render.checked(report, args.format, layers, breaches))
    return FLAKY_EXIT_CODE if breaches else 0


def run_migrate(args: argparse.Namespace) -> int:
    from ..errors import ConfigError
    from ..history.migrate import copy_history
    from ..settings import Settings, find_pyproject, read_pyproject
    from ..settings.dburl import DatabaseURL, is_database_url

    target = args.output or os.environ.get("AGENTEVALS_HISTORY", "")
    if not is_database_url(target):
        raise ConfigError(
            "--output",
            f"{target!r} is not a postgresql:// URL" if target else "is missing",
            "give --output postgresql://USER:PASSWORD@HOST:PORT/DATABASE, or set $AGENTEVALS_HISTORY",
        )
    url = DatabaseURL.parse("--output", target)
    # The file to copy: --history, else the project's setting (never $AGENTEVALS_HISTORY: the target).
    pyproject = find_pyproject(Path.cwd())
    settings = Settings.resolve(
        pyproject.parent if pyproject else Path.cwd(),
        cli={"history": args.history, "db_timeouts": args.db_timeouts},
        pyproject=read_pyproject(pyproject),
        flag_prefix="--",
        environ={},
    )
    origin = history_of(settings, create=False)
    if not isinstance(origin, Path):
        raise ConfigError("--history", f"{origin} is not an SQLite file", "give --history PATH of the file")
    url = dataclasses.replace(url, timeouts=settings.db_timeouts)
    source, destination = open_store(origin), open_store(url)
    try:
        copied = copy_history(source, destination)
    finally:
        source.close()
        destination.close()
    print(f"agentevals flaky migrate: {origin} -> {url}: {copied}")
    return 0
