"""What every subcommand shares: how machine output is asked for, and how its flags meet the settings.

- Machine output: `--format text|json|markdown` (the formats a command has), and `--json` as the
  short form of `--format json`, on every command that prints something a program may read.
- Settings: a flag that overrides a setting is declared with `add_setting` (its name, help and
  default come from the `OPTIONS` table) and read back through `settings_of`, which hands every such
  flag to `Settings.for_command_line`: the command line over `[tool.agentevals]` over the default,
  worked out in one place.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..settings import BY_KEY, Settings

FORMAT_HELP = {
    "text": "for a person",
    "json": "one JSON object, for a program",
    "markdown": "GitHub-flavoured Markdown, e.g. for $GITHUB_STEP_SUMMARY",
}


def add_format(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    """`--format` with these formats (the first is the default) and `--json`, its short form."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--format",
        choices=formats,
        default=formats[0],
        help="how to print the result: " + "; ".join(f"{name}: {FORMAT_HELP[name]}" for name in formats),
    )
    group.add_argument(
        "--json", dest="format", action="store_const", const="json", help="short for --format json"
    )


def add_setting(
    parser: argparse.ArgumentParser, key: str, metavar: str | None = None, help: str | None = None
) -> None:
    """A flag overriding the setting `key` (`--history` for `history`), its help from `OPTIONS`
    unless the command says it better."""
    option = BY_KEY[key]
    default = f", else {option.default}" if option.default not in (None, {}, ()) else ""
    parser.add_argument(
        "--" + key.replace("_", "-"),
        dest=key,
        action="append" if option.text else "store",  # a table's command-line form may be repeated
        metavar=metavar or option.metavar or key.upper(),
        help=help
        or f"{option.help} (default: [tool.agentevals] {key} in the nearest pyproject.toml{default})",
    )


def settings_of(args: argparse.Namespace, rootdir: Path | None = None) -> Settings:
    """The command's settings: each flag declared with `add_setting` over `[tool.agentevals]` of the
    nearest pyproject.toml (at or above `rootdir` when given, else the current directory)."""
    cli = {key: value for key, value in vars(args).items() if key in BY_KEY}
    return Settings.for_command_line(cli, start=rootdir.resolve() if rootdir is not None else None)
