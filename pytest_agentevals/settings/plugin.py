"""The settings' pytest face: one `--agentevals-*` option per entry of the `OPTIONS` table
(`add_options`), the run's settings resolved once at configure (`resolve_settings`) and read back by
every face (`settings_of`). The top-level `plugin.py` calls the first two; nothing else resolves a
setting.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ..errors import AgentEvalsDeprecationWarning, ConfigError
from .layers import LAYERS
from .options import OPTIONS, PATH_PARSERS, PYTEST_PREFIX, Option, renamed
from .resolve import Settings, find_pyproject, read_pyproject

SETTINGS_KEY = pytest.StashKey[Settings]()


def add_options(parser: pytest.Parser) -> None:
    """One `--agentevals-*` option per entry of the `OPTIONS` table (its 0.x spellings beside it)."""
    group = parser.getgroup("agentevals", "agentevals: the eval pyramid for long-running agents")
    for option in OPTIONS:
        if option.flag:
            group.addoption(option.cli, action="store_const", const=True, default=None, help=option.help)
        else:
            extra = f" (one of: {', '.join(option.choices)})" if option.choices else ""
            default = "" if option.default in (None, {}) else f"; default {option.default}"
            group.addoption(
                option.cli,
                *_old_flags(option),
                dest="agentevals_" + option.key,
                default=None,
                action="append" if option.text else "store",
                metavar=option.metavar or option.key.upper(),
                help=f"{option.help}{extra}{default}",
            )


def resolve_settings(config: pytest.Config) -> Settings:
    """The run's settings, resolved once (CLI > marker > pyproject > default) and kept in the stash;
    a bad value stops the run with a usage error naming it. Registers the layers' markers."""
    for layer in LAYERS:
        config.addinivalue_line("markers", layer.marker_help)
    cli = {option.key: config.getoption("agentevals_" + option.key) for option in OPTIONS}
    try:
        settings = Settings.resolve(config.rootpath, cli=cli, pyproject=read_pyproject(_pyproject(config)))
    except ConfigError as exc:
        raise pytest.UsageError(f"agentevals: {exc}") from None
    config.stash[SETTINGS_KEY] = settings
    _warn_spaced_paths(config)
    for warning in (*settings.deprecations, *_old_flags_used(config)):
        config.issue_config_time_warning(AgentEvalsDeprecationWarning(f"agentevals: {warning}"), stacklevel=2)
    return settings


def _old_flags(option: Option) -> list[str]:
    return [PYTEST_PREFIX + old.replace("_", "-") for old in option.old]


def _old_flags_used(config: pytest.Config) -> list[str]:
    """A warning for each 0.x option spelling on the command line (or in the ini `addopts`)."""
    words = [*config.invocation_params.args, *config.getini("addopts")]
    return [
        renamed(old, option.cli, "the command line")
        for option in OPTIONS
        for old in _old_flags(option)
        if any(word == old or word.startswith(old + "=") for word in words)
    ]


# The options whose value is a path: given as `--opt VALUE`, pytest takes VALUE as a test path too
# when it chooses the rootdir, so a path outside the project moves the rootdir (and .agentevals/).
PATH_OPTIONS = frozenset(
    flag for option in OPTIONS if option.parse in PATH_PARSERS for flag in (option.cli, *_old_flags(option))
)


def _warn_spaced_paths(config: pytest.Config) -> None:
    args, here = list(config.invocation_params.args), config.invocation_params.dir
    for flag, value in itertools.pairwise(args):
        if flag not in PATH_OPTIONS or value.startswith("-") or "://" in value:
            continue
        path = Path(value) if Path(value).is_absolute() else here / value
        if path.resolve().is_relative_to(here.resolve()):
            continue  # inside the folder pytest runs in: the rootdir is not moved
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(
                f"agentevals: {flag} {value}: written with a space, pytest also took {value} as a test "
                f"path when it chose the rootdir ({config.rootpath}), where .agentevals/ and the "
                f"settings are looked for; write {flag}={value}"
            ),
            stacklevel=2,
        )


def settings_of(config: pytest.Config) -> Settings:
    """The run's resolved settings (for fixtures and the other faces)."""
    return config.stash[SETTINGS_KEY]


def _pyproject(config: pytest.Config) -> Path | None:
    inipath = config.inipath
    if inipath is not None and inipath.name == "pyproject.toml":
        return inipath
    return find_pyproject(config.rootpath)
