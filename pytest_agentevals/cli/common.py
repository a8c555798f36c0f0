"""What every subcommand shares: how machine output is asked for, and how its flags meet the settings.

- Machine output: `--format text|json|markdown` (the formats a command has), and `--json` as the
  short form of `--format json`, on every command that prints something a program may read.
- Settings: a flag that overrides a setting is declared with `add_setting` (its name, help and
  default come from the `OPTIONS` table) and read back through `settings_of`, which hands every such
  flag to `Settings.for_command_line`: the command line over `[tool.agentevals]` over the default,
  worked out in one place.
- Names (the naming table, `settings/names.py`): where a command writes is `-o/--output`; a
  setting's flag is its key. A flag's 0.x spelling (`add_renamed`) still works for one release,
  hidden from `--help`, and says on stderr which flag to write; so does a setting's old key.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..settings import BY_KEY, Settings
from ..settings.options import renamed

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
    unless the command says it better; the key's 0.x spellings as flags too, warned."""
    option = BY_KEY[key]
    default = f", else {option.default}" if option.default not in (None, {}, ()) else ""
    flag = "--" + key.replace("_", "-")
    parser.add_argument(
        flag,
        dest=key,
        action="append" if option.text else "store",  # a table's command-line form may be repeated
        metavar=metavar or option.metavar or key.upper(),
        help=help
        or f"{option.help} (default: [tool.agentevals] {key} in the nearest pyproject.toml{default})",
    )
    add_renamed(parser, flag, ["--" + old.replace("_", "-") for old in option.old], dest=key)


class _Renamed(argparse.Action):
    """A flag's 0.x spelling: stores what the flag now spelled `new` stores, and says so on stderr."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        print(f"agentevals: {renamed(str(option), self.new, parser.prog)}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_renamed(
    parser: argparse.ArgumentParser, new: str, old: Sequence[str], *, dest: str, **kwargs: Any
) -> None:
    """The 0.x spellings `old` of the flag `new` (which takes one value), kept out of `--help`."""
    if old:
        parser.add_argument(*old, dest=dest, action=_Renamed, new=new, help=argparse.SUPPRESS, **kwargs)


def add_output(parser: argparse.ArgumentParser, help: str, *, old: Sequence[str] = (), **kwargs: Any) -> None:
    """`-o/--output`, where the command writes (every command spells it so), and its 0.x spellings."""
    parser.add_argument("-o", "--output", dest="output", help=help, **kwargs)
    add_renamed(parser, "--output", old, dest="output", **{k: v for k, v in kwargs.items() if k == "type"})


def settings_of(args: argparse.Namespace, rootdir: Path | None = None) -> Settings:
    """The command's settings: each flag declared with `add_setting` over `[tool.agentevals]` of the
    nearest pyproject.toml (at or above `rootdir` when given, else the current directory). What the
    configuration still spells as in 0.x is said on stderr."""
    cli = {key: value for key, value in vars(args).items() if key in BY_KEY}
    settings = Settings.for_command_line(cli, start=rootdir.resolve() if rootdir is not None else None)
    for warning in settings.deprecations:
        print(f"agentevals: {warning}", file=sys.stderr)
    return settings


def named_object(name: str, label: str, how: str, error: Callable[[str], Exception]) -> Any:
    """What `MODULE:ATTR` names, imported from the working directory as `python -m` imports it. Each
    way it fails is one `error(...)` starting with `label`: no `:` (then `how` says how to name it),
    a module that cannot be imported or whose own code raised, no such attribute."""
    module_name, _, attr = name.partition(":")
    if not module_name or not attr:
        raise error(f"{label}: {how}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise error(
            f"{label}: cannot import {module_name} ({exc}); run from the folder it is in, or install it"
        ) from None
    except Exception as exc:  # the module's own code failed
        raise error(f"{label}: importing {module_name} raised {type(exc).__name__}: {exc}") from exc
    found = getattr(module, attr, None)
    if found is None:
        raise error(f"{label}: {module_name} has no {attr}")
    return found
